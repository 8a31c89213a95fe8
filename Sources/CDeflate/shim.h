// libdeflate (Debian's libdeflate-dev): whole-buffer gzip decompression for the NIfTI reader. The only place
// libdeflate is named; imported by ImageFiles alone.
#include <libdeflate.h>
