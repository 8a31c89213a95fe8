// Open MPI's handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, MPI_IN_PLACE, …) are macros over library globals or
// pointer casts that Swift cannot import: each becomes a static inline function here. The only file that names
// MPI; the Distributed target is its only importer.
#ifndef CMPI_SHIM_H
#define CMPI_SHIM_H
#include <mpi.h>

static inline MPI_Comm cmpi_comm_world(void) { return MPI_COMM_WORLD; }
static inline MPI_Datatype cmpi_float(void) { return MPI_FLOAT; }
static inline MPI_Datatype cmpi_double(void) { return MPI_DOUBLE; }
static inline MPI_Datatype cmpi_byte(void) { return MPI_BYTE; }
static inline MPI_Op cmpi_sum(void) { return MPI_SUM; }
static inline MPI_Op cmpi_max(void) { return MPI_MAX; }
static inline void *cmpi_in_place(void) { return MPI_IN_PLACE; }
static inline MPI_Status *cmpi_status_ignore(void) { return MPI_STATUS_IGNORE; }
static inline MPI_Request cmpi_request_null(void) { return MPI_REQUEST_NULL; }
static inline MPI_Errhandler cmpi_errors_return(void) { return MPI_ERRORS_RETURN; }
static inline int cmpi_success(void) { return MPI_SUCCESS; }
static inline int cmpi_thread_funneled(void) { return MPI_THREAD_FUNNELED; }
static inline int cmpi_max_error_string(void) { return MPI_MAX_ERROR_STRING; }

/// The MPI library's message for `code` into `buffer` (at least cmpi_max_error_string() bytes).
static inline void cmpi_error_string(int code, char *buffer) {
    int length = 0;
    if (MPI_Error_string(code, buffer, &length) != MPI_SUCCESS) { buffer[0] = 0; }
}
#endif
