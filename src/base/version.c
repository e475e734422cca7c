/* version.c -- run-time version and build-feature queries. */
#include "base/base.h"

int sap_version(void) { return SAP_VERSION_NUMBER; }

const char *sap_version_string(void) { return SAP_VERSION_STRING; }

int sap_has_zlib(void)
{
#ifdef SAP_HAVE_ZLIB
    return 1;
#else
    return 0;
#endif
}
