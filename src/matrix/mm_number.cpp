// mm_number.cpp -- owns the number conversions of the Matrix Market reader and writer
// (declared in mm_number.h): fast_float for reals, std::to_chars for output.  The
// library's only C++ unit: no exceptions, no allocation, nothing but the C interface is
// visible outside it.
#include "matrix/mm_number.h"

#include <fast_float/fast_float.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace {

// strtod on a NUL-terminated copy of [s, e): the rare values fast_float reports out of range
const char *parse_double_strtod(const char *s, const char *e, double *v)
{
    char buf[4096];
    const size_t n = static_cast<size_t>(e - s);
    if (n >= sizeof(buf)) return nullptr; // a number of more than 4095 characters
    std::memcpy(buf, s, n);
    buf[n] = '\0';
    char *stop = nullptr;
    const double x = std::strtod(buf, &stop);
    if (stop != buf + n) return nullptr;
    *v = x;
    return e;
}

} // namespace

extern "C" const char *sap__parse_double(const char *p, const char *end, double *v)
{
    const char *s = p;
    if (p < end && *p == '+') { // fast_float, like std::from_chars, takes no '+'
        p++;
        if (p < end && *p == '-') return nullptr;
    }
    double x = 0.0;
    const fast_float::from_chars_result r = fast_float::from_chars(p, end, x);
    if (r.ec == std::errc::invalid_argument) return nullptr;
    if (r.ptr[-1] == ')') return nullptr; // "nan(chars)": not a Matrix Market number
    if (r.ec == std::errc::result_out_of_range) return parse_double_strtod(s, r.ptr, v);
    *v = x;
    return r.ptr;
}

extern "C" int sap__format_double(char *out, double v, int precision)
{
    if (precision < 1) precision = 1;
    if (precision > 17) precision = 17;
    const std::to_chars_result r = std::to_chars(out, out + SAP_NUMBER_MAX, v, std::chars_format::general, precision);
    return static_cast<int>(r.ptr - out);
}

extern "C" int sap__format_u64(char *out, uint64_t v)
{
    return static_cast<int>(std::to_chars(out, out + SAP_NUMBER_MAX, v).ptr - out);
}

extern "C" int sap__format_i64(char *out, int64_t v)
{
    return static_cast<int>(std::to_chars(out, out + SAP_NUMBER_MAX, v).ptr - out);
}
