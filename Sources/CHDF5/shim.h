// HDF5's type and property-list identifiers are macros that expand to library globals after H5open();
// Swift cannot import them, so each becomes a static inline function here.
#ifndef CHDF5_SHIM_H
#define CHDF5_SHIM_H
#include <hdf5.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>

static inline hid_t chdf5_p_default(void) { return H5P_DEFAULT; }
static inline hid_t chdf5_s_all(void) { return H5S_ALL; }
static inline hid_t chdf5_p_file_access(void) { H5open(); return H5P_FILE_ACCESS; }
static inline hid_t chdf5_p_dataset_create(void) { H5open(); return H5P_DATASET_CREATE; }
static inline hid_t chdf5_p_link_create(void) { H5open(); return H5P_LINK_CREATE; }
static inline hid_t chdf5_native_uint8(void) { H5open(); return H5T_NATIVE_UINT8; }
static inline hid_t chdf5_native_uint16(void) { H5open(); return H5T_NATIVE_UINT16; }
static inline hid_t chdf5_native_int32(void) { H5open(); return H5T_NATIVE_INT32; }
static inline hid_t chdf5_native_int64(void) { H5open(); return H5T_NATIVE_INT64; }
static inline hid_t chdf5_native_float(void) { H5open(); return H5T_NATIVE_FLOAT; }
static inline hid_t chdf5_native_double(void) { H5open(); return H5T_NATIVE_DOUBLE; }
static inline hid_t chdf5_c_s1(void) { H5open(); return H5T_C_S1; }
static inline unsigned chdf5_acc_rdonly(void) { return H5F_ACC_RDONLY; }
static inline unsigned chdf5_acc_rdwr(void) { return H5F_ACC_RDWR; }
static inline unsigned chdf5_acc_trunc(void) { return H5F_ACC_TRUNC; }
static inline unsigned chdf5_acc_excl(void) { return H5F_ACC_EXCL; }
static inline size_t chdf5_variable(void) { return H5T_VARIABLE; }
static inline hsize_t chdf5_unlimited(void) { return H5S_UNLIMITED; }
static inline haddr_t chdf5_haddr_undef(void) { return HADDR_UNDEF; }
/// Silences HDF5's default error printing; SliceLab reports errors itself.
static inline void chdf5_silence_errors(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

static inline herr_t chdf5_walk_(unsigned n, const H5E_error2_t *e, void *data) {
    char *buf = (char *)data;
    size_t used = strlen(buf);
    if (e->desc && used + 3 < 4096) {
        if (used) { strcat(buf, "; "); used += 2; }
        strncat(buf, e->desc, 4095 - used);
    }
    (void)n;
    return 0;
}
/// Copies the current HDF5 error stack's descriptions into `buffer` (4096 bytes) and clears the stack.
static inline void chdf5_last_error(char *buffer) {
    buffer[0] = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, chdf5_walk_, buffer);
    H5Eclear2(H5E_DEFAULT);
}

// MARK: - Probe (runs in a forked child; see `hdf5ProbeInChildProcess` in ImageFiles)
// This walk is C, not Swift, because it runs in a child forked from a multi-threaded process, where code must
// not take a lock another thread may have held at the fork (the Swift runtime's, say): the child calls only
// HDF5 and malloc (which glibc makes fork-safe), then `_exit`s, so nothing it allocates is freed.

typedef struct { size_t budget; } chdf5_probe_state_;

/// The memory type a value is read as: floats as stored (the raw bits; HDF5 1.10's soft conversion of float16
/// to native float would make the walk slower than the read it precedes), everything else as its native type.
static inline hid_t chdf5_probe_memory_type_(hid_t type) {
    if (type < 0) return -1;
    return H5Tget_class(type) == H5T_FLOAT ? type : H5Tget_native_type(type, H5T_DIR_DEFAULT);
}

/// A buffer for `space`'s values as `memory`, taken from the budget; NULL when they do not fit it (or are empty).
/// The values' size in the file counts too (`stored`, the file type): HDF5 converts through a buffer of that
/// size, and a malformed type may claim gigabytes per value.
static inline void *chdf5_probe_buffer_(chdf5_probe_state_ *state, hid_t memory, hid_t stored, hid_t space) {
    hssize_t count = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    size_t size = memory >= 0 ? H5Tget_size(memory) : 0;
    size_t storedSize = stored >= 0 ? H5Tget_size(stored) : 0;
    if (storedSize > size) size = storedSize;
    if (count <= 0 || size == 0 || (size_t)count > state->budget / size) return NULL;
    state->budget -= (size_t)count * size;
    return malloc((size_t)count * size);
}

static inline herr_t chdf5_probe_attribute_(hid_t object, const char *name, const H5A_info_t *info, void *data) {
    chdf5_probe_state_ *state = (chdf5_probe_state_ *)data;
    hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
    if (attribute < 0) return 0;
    hid_t stored = H5Aget_type(attribute);
    hid_t memory = chdf5_probe_memory_type_(stored);
    void *buffer = chdf5_probe_buffer_(state, memory, stored, H5Aget_space(attribute));
    if (buffer) H5Aread(attribute, memory, buffer);
    (void)info;
    return 0;
}

static inline void chdf5_probe_attributes_(hid_t object, chdf5_probe_state_ *state) {
    hsize_t index = 0;
    H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_NATIVE, &index, chdf5_probe_attribute_, state);
}

static inline herr_t chdf5_probe_link_(hid_t group, const char *name, const H5L_info_t *info, void *data) {
    chdf5_probe_state_ *state = (chdf5_probe_state_ *)data;
    if (info->type != H5L_TYPE_HARD || H5Lexists(group, name, H5P_DEFAULT) <= 0) return 0;
    hid_t object = H5Oopen(group, name, H5P_DEFAULT);
    if (object < 0) return 0;
    chdf5_probe_attributes_(object, state);
    if (H5Iget_type(object) == H5I_DATASET) {
        hid_t stored = H5Dget_type(object);
        hid_t memory = chdf5_probe_memory_type_(stored);
        void *buffer = chdf5_probe_buffer_(state, memory, stored, H5Dget_space(object));
        if (buffer) H5Dread(object, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer);
    }
    H5Oclose(object);
    return 0;
}

/// Opens `path` read-only and walks everything SliceLab could read from it: every hard link (checked with
/// H5Lexists and opened), every attribute, and every dataset's values while their total stays within
/// `budget` bytes. Returns 0 whatever HDF5 reports (the caller reads the file itself and gets the library's
/// errors then); only a crash of the library is the caller's signal. Meant for a forked child.
static inline int chdf5_probe_file(const char *path, size_t budget) {
    // A crash must end the child quietly: default signal actions (not the Swift runtime's backtracer) and no
    // core file.
    // The child shares the parent's open files: one the parent is writing keeps its HDF5 lock (flock) while any
    // copy of the descriptor is open, so the child lets go of them all before anything else, or a quick reopen
    // by the parent (or by another process) would fail with EAGAIN while the child runs.
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
        for (int fd = 3; fd < 65536; fd++) close(fd);
    }
    const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP };
    for (unsigned i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
    struct rlimit none = { 0, 0 };
    setrlimit(RLIMIT_CORE, &none);
    // Memory is bounded too: the address space it has now plus the budget and 256 MiB for the library. A
    // malformed type or fill value can make HDF5 itself allocate gigabytes on opening a dataset (a 4 GB
    // element type in a 2 KB file); beyond the bound its allocations fail and it reports an error instead.
    int statm = open("/proc/self/statm", O_RDONLY);
    char text[64] = { 0 };
    if (statm >= 0 && read(statm, text, sizeof text - 1) > 0) {
        rlim_t pages = strtoull(text, NULL, 10);
        struct rlimit bound = { pages * (rlim_t)sysconf(_SC_PAGESIZE) + budget + (256u << 20), 0 };
        bound.rlim_max = bound.rlim_cur;
        setrlimit(RLIMIT_AS, &bound);
    }
    if (statm >= 0) close(statm);
    chdf5_silence_errors();
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) return 0;
    chdf5_probe_state_ state = { budget };
    chdf5_probe_attributes_(file, &state);
    H5Lvisit(file, H5_INDEX_NAME, H5_ITER_NATIVE, chdf5_probe_link_, &state);
    H5Fclose(file);
    return 0;
}
#endif
