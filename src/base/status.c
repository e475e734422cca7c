/* status.c -- names and descriptions of sap_status values, from SAP_STATUS_TABLE. */
#include "base/base.h"

const char *sap_status_string(sap_status status)
{
    switch (status) {
#define SAP_X_TEXT(name, value, text) \
    case name:                        \
        return text;
        SAP_STATUS_TABLE(SAP_X_TEXT)
#undef SAP_X_TEXT
    }
    return "unknown status";
}

const char *sap_status_name(sap_status status)
{
    switch (status) {
#define SAP_X_NAME(name, value, text) \
    case name:                        \
        return #name;
        SAP_STATUS_TABLE(SAP_X_NAME)
#undef SAP_X_NAME
    }
    return "SAP_UNKNOWN";
}
