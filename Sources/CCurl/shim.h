// libcurl (Debian's libcurl4-openssl-dev): HTTP(S) for the DICOMweb client. The only place libcurl is named;
// imported by SliceLabNetwork alone. curl_easy_setopt and curl_easy_getinfo are variadic macros: the typed
// inline functions below are what Swift calls.
#include <curl/curl.h>

static inline CURLcode cdcw_setopt_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode cdcw_setopt_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode cdcw_setopt_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode cdcw_setopt_offset(CURL *curl, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(curl, option, value);
}
typedef size_t (*cdcw_write_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode cdcw_setopt_write(CURL *curl, cdcw_write_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode cdcw_setopt_header(CURL *curl, cdcw_write_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, callback);
}
static inline CURLcode cdcw_response_code(CURL *curl, long *code) {
    return curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, code);
}
