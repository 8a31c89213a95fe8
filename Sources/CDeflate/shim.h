// libdeflate (Debian's libdeflate-dev): whole-buffer gzip for the NIfTI and NRRD readers and the NRRD writer. The only place
// libdeflate is named; imported by ImageFiles alone.
#include <libdeflate.h>
