/* The core clock while busy, for the benchmarks' peak figures: a chain of dependent integer additions, one per
   cycle on every x86-64 core, timed over 2 billion of them. In a VM /proc/cpuinfo's "cpu MHz" is the nominal
   clock (2.45 GHz on the AMD EPYC the README's figures come from), not the boosted one the kernels run at. */
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec start, end;
    long count = 2000000000L, x = 0;
    clock_gettime(CLOCK_MONOTONIC, &start);
    __asm__ volatile("1: add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n sub $4, %1\n jnz 1b"
                     : "+r"(x), "+r"(count));
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
    printf("%.3f\n", 2.0 / seconds);
    return 0;
}
