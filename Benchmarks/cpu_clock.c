/* The core clock while busy, for the benchmarks' peak figures: a chain of dependent 64-bit integer multiplications,
   3 cycles each on every x86-64 core of the last decade (Intel since Nehalem, AMD since Zen; Agner Fog's and
   uops.info's tables), timed over 1.2 billion of them. (A chain of `add $1, reg` measured 7 GHz on a Sapphire
   Rapids Xeon, whose renamer folds immediate additions, so additions are not a clock.) In a VM /proc/cpuinfo's
   "cpu MHz" is the nominal clock, not the boosted one the kernels run at. */
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec start, end;
    long count = 1200000000L, x = 1, one = 1;
    clock_gettime(CLOCK_MONOTONIC, &start);
    __asm__ volatile("1: imul %2, %0\n imul %2, %0\n imul %2, %0\n imul %2, %0\n sub $4, %1\n jnz 1b"
                     : "+r"(x), "+r"(count)
                     : "r"(one));
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
    printf("%.3f\n", 3.0 * 1.2 / seconds);
    return 0;
}
