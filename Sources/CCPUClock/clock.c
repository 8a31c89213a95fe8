// The core clock while busy: see the header. The same chain as Benchmarks/cpu_clock.c.
#include "CCPUClock.h"

int32_t cclock_multiply_chain(int64_t count) {
#if defined(__x86_64__)
    int64_t x = 1, one = 1;
    __asm__ volatile("1: imul %2, %0\n imul %2, %0\n imul %2, %0\n imul %2, %0\n sub $4, %1\n jnz 1b"
                     : "+r"(x), "+r"(count)
                     : "r"(one));
    return 0;
#else
    (void)count;
    return -1;
#endif
}
