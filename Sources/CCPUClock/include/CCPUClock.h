// The core clock while busy, ours (no outside library; used by Swift's `DeepLab`, `measuredGigahertz`, only).
#ifndef CCPUCLOCK_H
#define CCPUCLOCK_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/// Runs `count` (a multiple of 4) dependent 64-bit integer multiplications on the calling thread: 3 cycles each on
/// every x86-64 core of the last decade (Intel since Nehalem, AMD since Zen; uops.info), so their time is 3 · count
/// cycles. Written in assembly, so no compiler shortens the chain (a chain of additions is no clock either: a
/// Sapphire Rapids Xeon's renamer folds immediate additions). Returns 0, or −1 off x86-64 (nothing run).
int32_t cclock_multiply_chain(int64_t count);

#ifdef __cplusplus
}
#endif
#endif
