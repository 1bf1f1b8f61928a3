/* A C program for the native resolution tests. With a second argument
 * it writes through a null pointer. */
#include <stdio.h>
#include <stdlib.h>
#include "util.h"

static int sum(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += square(i);
	return s;
}

__attribute__((noinline)) int compute(int n, int crash)
{
	volatile int *p = NULL;
	int r = sum(n);
	if (crash)
		*p = r;
	return r;
}

int main(int argc, char **argv)
{
	printf("%d\n", compute(argc > 1 ? atoi(argv[1]) : 3, argc > 2));
	return 0;
}
