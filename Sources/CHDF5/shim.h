// HDF5's type and property-list identifiers are macros that expand to library globals after H5open();
// Swift cannot import them, so each becomes a static inline function here.
#ifndef CHDF5_SHIM_H
#define CHDF5_SHIM_H
#include <hdf5.h>
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
#endif
