/* Inlined at -O2 into its callers: its frames are inlined calls. */
static inline int square(int x)
{
	return x * x;
}
