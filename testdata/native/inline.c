/* A C program for the PDB inlinee tests: static inline functions inlined
 * at -O2 into each other, one of them from util.h, over interleaved ranges. */
#include "util.h"

static inline int clamp(int v, int hi)
{
	if (v > hi)
		return hi;
	return v;
}

static inline int mix(volatile int *p, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += clamp(square(p[i]), 1000) ^ i;
	return s;
}

__attribute__((noinline)) int work(volatile int *p, int n)
{
	int a = mix(p, n);
	p[0] = a;
	int b = mix(p + 1, n - 1);
	return a + b;
}

int main(int argc, char **argv)
{
	volatile int buf[8] = {argc};
	return work(buf, argc);
}
