/* cpu_template_end.h -- closes a precision template (see cpu_template.h). */
#undef FN
#undef SAP_FN1
#undef SAP_FN2
