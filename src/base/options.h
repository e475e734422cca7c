/* options.h -- the one typed option system and the one name -> enum helper.  Internal.
 *
 * An owner (the solver options, a generator, a preconditioner type, ...) describes its
 * options once, in a table of sap_opt_def: name, help, default text, kind, where the
 * value lives in the owner's struct (offset, size), accepted range and words.  From that
 * table come parsing ("name=value" and "k=v,k=v" lists, with messages naming the option,
 * the value and what is accepted), defaults, help text and text/JSON dumps.
 *
 * Names, enum words and boolean words compare case-insensitively everywhere. */
#ifndef SAP_BASE_OPTIONS_H
#define SAP_BASE_OPTIONS_H

#include "base/base.h"

#include <stdatomic.h>
#include <stddef.h>

/* ---- names -> enum values ---------------------------------------------------------------- */

/* A word and the value it stands for; tables end with {NULL, 0}.  Several words may share
 * a value (aliases); the first word of a value is its canonical name. */
typedef struct sap_name_value {
    const char *name;
    int value;
} sap_name_value;

/* 1 when s[0..len) equals word, ignoring case. */
int sap__word_eq(const char *s, size_t len, const char *word);
/* Case-insensitive lookup of s[0..len) (len = (size_t)-1: NUL-terminated); 1 and *value
 * when found, else 0 (*value untouched). */
int sap__name_lookup(const sap_name_value *tab, const char *s, size_t len, int *value);
/* The canonical name of value, or 'unknown'. */
const char *sap__name_of(const sap_name_value *tab, int value, const char *unknown);
/* "a|b|c": the canonical names (one per value), separated by sep; returns the length. */
size_t sap__name_list(const sap_name_value *tab, const char *sep, char *buf, size_t size);
/* The common parse function of the public *_parse(name, &enum) functions: SAP_OK and
 * *value, or SAP_ERR_INVALID (NULL arguments, unknown word). */
sap_status sap__enum_parse(const sap_name_value *tab, const char *name, int *value);

/* The words of public enums parsed in several places (enums.c). */
extern const sap_name_value sap__backend_words[];     /* auto, cpu, cuda (gpu) */
extern const sap_name_value sap__format_words[];      /* auto, csr, ell, sellp (sell-p), hec, band */
extern const sap_name_value sap__band_method_words[]; /* auto (sap), sap-d (sapd, d), sap-c (sapc, c), direct */
extern const sap_name_value sap__precision_words[];   /* double, float (single) */

/* ---- typed options ---------------------------------------------------------------------------- */

typedef enum sap_opt_kind {
    SAP_OPT_INT,      /* int or int64 field (by size): 200000, 2e5, 200k, 1.5M, 2G, 1T (integral) */
    SAP_OPT_UINT64,   /* uint64 field: 0 .. 2^64 - 1 in decimal, or as SAP_OPT_INT when >= 0 */
    SAP_OPT_REAL,     /* double: anything strtod reads that is finite */
    SAP_OPT_FRACTION, /* double in [lo, hi], [0, 1] when no range is given */
    SAP_OPT_BOOL,     /* int: 1/0, on/off, true/false, yes/no */
    SAP_OPT_ENUM,     /* int: one of the words in choices */
    SAP_OPT_BYTES,    /* int64: bytes with binary suffixes k/M/G/T (and an optional B) */
    SAP_OPT_STRING,   /* char[size]: the text, NUL-terminated (too long: an error) */
    SAP_OPT_CUSTOM    /* parse/print callbacks (e.g. a Krylov spec setting several fields) */
} sap_opt_kind;

typedef struct sap_opt_def {
    const char *name;  /* canonical name */
    const char *alias; /* another accepted name, or NULL */
    const char *help;  /* one line */
    const char *def;   /* default value text; NULL: no default (required in a spec) */
    sap_opt_kind kind;
    size_t offset, size; /* of the field in the owner's struct (SAP_OPT_AT) */
    double lo, hi;       /* accepted range (numbers), checked when lo < hi */
    /* SAP_OPT_ENUM: the accepted words.  Other kinds: extra words accepted besides
     * numbers (e.g. {"auto", -1}), stored as the value (REAL: converted to double). */
    const sap_name_value *choices;
    const char *meta; /* placeholder in the help for the number, e.g. "P", "DELTA" */
    /* SAP_OPT_CUSTOM: parse (0 = ok) and print into the whole owner struct */
    int (*parse)(void *obj, const char *value);
    void (*print)(const void *obj, char *buf, size_t size);
} sap_opt_def;

/* offset and size of a member, for sap_opt_def: SAP_OPT_AT(sap_solver_options, krylov.tol) */
#define SAP_OPT_AT(type, member) .offset = offsetof(type, member), .size = sizeof(((type *)0)->member)

/* Index of the option named s[0..len) (name or alias, case-insensitive), or -1. */
int sap__opt_find(const sap_opt_def *defs, int n, const char *s, size_t len);
/* Parses value[0..len) into the field of d in obj.  SAP_ERR_INVALID with err (may be NULL)
 * "<noun> 'name': bad value 'v' (expected ...)" naming the accepted values or range; obj is
 * untouched on error. */
sap_status sap__opt_parse(const sap_opt_def *d, void *obj, const char *value, size_t len, const char *noun,
                          char *err, size_t errlen);
/* name=value into obj; unknown names list the valid ones. */
sap_status sap__opt_set(const sap_opt_def *defs, int n, void *obj, const char *name, const char *value,
                        const char *noun, char *err, size_t errlen);
/* Every option that has a default gets it. */
sap_status sap__opt_defaults(const sap_opt_def *defs, int n, void *obj);
/* "k=v,k=v,..." (spaces around items, keys and values ignored; empty items skipped).
 * given (n entries, may be NULL) marks the options set; with it, an option given twice
 * is an error.  On error obj may be partly set (parse into a copy to be atomic). */
sap_status sap__opt_parse_list(const sap_opt_def *defs, int n, void *obj, const char *list, size_t len,
                               unsigned char *given, const char *noun, char *err, size_t errlen);
/* The current value of d in obj as text (the form the parser accepts back). */
void sap__opt_format(const sap_opt_def *d, const void *obj, char *buf, size_t size);
/* Current values: "name=value\n" lines (json = 0), or one JSON object {"name": value, ...}.
 * Returns the length the full text needs (like snprintf). */
size_t sap__opt_dump(const sap_opt_def *defs, int n, const void *obj, int json, char *buf, size_t size);
/* Help: one line per option, "<indent>name=ACCEPTED  help (default X)". */
size_t sap__opt_help(const sap_opt_def *defs, int n, const char *indent, char *buf, size_t size);
/* "n, k, d (default 1), ...": names with defaults, for messages. */
size_t sap__opt_names(const sap_opt_def *defs, int n, char *buf, size_t size);
/* What the option accepts, e.g. "auto|none|DELTA", "an integer >= 0". */
void sap__opt_accepts(const sap_opt_def *d, char *buf, size_t size);

/* ---- once and a spin lock (C11 atomics), for process-wide tables ---------------------------- */

/* Runs fn exactly once for the flag (0-initialised); other callers wait until it ran. */
void sap__once(atomic_int *flag, void (*fn)(void));
void sap__spin_lock(atomic_flag *lock);
void sap__spin_unlock(atomic_flag *lock);

#endif /* SAP_BASE_OPTIONS_H */
