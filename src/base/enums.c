/* enums.c -- the words of the public enums that several layers parse (each *_parse
 * function and option table uses these through base/options.h).  Aliases follow the
 * canonical (first) name of their value. */
#include "base/options.h"

const sap_name_value sap__backend_words[] = {
    {"auto", SAP_BACKEND_AUTO}, {"cpu", SAP_BACKEND_CPU}, {"cuda", SAP_BACKEND_CUDA}, {"gpu", SAP_BACKEND_CUDA}, {NULL, 0}};

const sap_name_value sap__format_words[] = {{"auto", SAP_FORMAT_AUTO},     {"csr", SAP_FORMAT_CSR},
                                            {"ell", SAP_FORMAT_ELL},       {"sellp", SAP_FORMAT_SELLP},
                                            {"sell-p", SAP_FORMAT_SELLP},  {"hec", SAP_FORMAT_HEC},
                                            {"band", SAP_FORMAT_BAND},     {NULL, 0}};

const sap_name_value sap__band_method_words[] = {
    {"auto", SAP_BAND_AUTO}, {"sap-d", SAP_BAND_SAPD}, {"sap-c", SAP_BAND_SAPC}, {"direct", SAP_BAND_DIRECT},
    {"sap", SAP_BAND_AUTO},  {"sapd", SAP_BAND_SAPD},  {"d", SAP_BAND_SAPD},     {"sapc", SAP_BAND_SAPC},
    {"c", SAP_BAND_SAPC},    {NULL, 0}};

const sap_name_value sap__precision_words[] = {{"double", SAP_DOUBLE}, {"float", SAP_FLOAT}, {"single", SAP_FLOAT},
                                               {NULL, 0}};
