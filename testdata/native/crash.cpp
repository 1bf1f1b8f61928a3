// A C++ program for the native resolution tests: a namespace, a class
// method, a static inline function inlined at -O2. With a second
// argument it writes through a null pointer.
#include <cstdio>
#include <cstdlib>
#include "util.h"

namespace probe {
class Runner {
public:
	explicit Runner(int base) : base_(base) {}
	int run(int n, bool crash);
	int twice(int n) const { return 2 * compute(n); }

private:
	int compute(int n) const;
	int base_;
};

__attribute__((noinline)) int Runner::compute(int n) const
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += square(i + base_);
	return s;
}

__attribute__((noinline)) int Runner::run(int n, bool crash)
{
	volatile int *p = nullptr;
	int r = twice(n);
	if (crash)
		*p = r;
	return r + square(n);
}
} // namespace probe

int main(int argc, char **argv)
{
	probe::Runner runner(argc);
	int n = argc > 1 ? atoi(argv[1]) : 3;
	printf("%d\n", runner.run(n, argc > 2));
	return 0;
}
