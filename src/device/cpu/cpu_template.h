/* cpu_template.h -- the one precision-template convention of the cpu backend: a *_t.h
 * file is included once per precision with S = d, REAL = double and S = s, REAL = float
 * defined; FN(name) gives name_d / name_s.  Each template includes this header first
 * and undefines FN at its end (#include "device/cpu/cpu_template_end.h"). */
#define SAP_FN2(a, b) a##_##b
#define SAP_FN1(a, b) SAP_FN2(a, b)
#define FN(name) SAP_FN1(name, S)
