/*
 * mmio.c -- Matrix Market reader and writer (plain or gzip-compressed) for libspmvport.
 *
 * Reader: "%%MatrixMarket matrix coordinate FIELD SYMMETRY" with FIELD real, integer or pattern (value 1) and
 * SYMMETRY general, symmetric or skew-symmetric (both expanded to the full matrix; skew entries mirror with the
 * value negated). Banner words are case-insensitive. Comment lines (first non-blank character '%') and blank
 * lines may appear anywhere after the banner; CRLF endings, tabs and surrounding blanks are accepted. The
 * dense "array" format, complex values and hermitian symmetry return SPMV_STATUS_NOT_SUPPORTED.
 *
 * Every problem returns a status and a message "PATH:LINE: what is wrong"; nothing aborts or prints.
 * Sizes must fit int32 (SPMV_STATUS_OVERFLOW). For symmetric and skew-symmetric files the check is made on
 * the size line against 2*NNZ, the worst case of the expansion, so a file is refused before any memory is
 * spent on it; its exact expanded count is not known until every entry has been read.
 *
 * Input goes through zlib's gzread, which reads uncompressed files transparently: one code path for .mtx
 * and .mtx.gz. Lines are cut from a block buffer that grows for long lines, up to SPMVPORT_MTX_MAX_LINE bytes
 * ("line too long" beyond). Integers are parsed by hand and values with strtod (no sscanf): tens of
 * millions of entries take seconds. The triplet arrays grow geometrically, so a size line that announces more entries than the
 * file holds costs no memory and ends in "expected N entries, found K".
 *
 * Writer: "coordinate real general", one entry a line, values "%.17g" (round-trips every double exactly);
 * gzip when the path ends in ".gz", plain text otherwise.
 */

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "internal.h"

/* gzopen(path, "wT") (transparent, i.e. uncompressed, writing) appeared in zlib 1.2.6. */
#if ZLIB_VERNUM < 0x1260
#error "libspmvport needs zlib 1.2.6 or newer"
#endif

/* Longest line accepted, in bytes without the line ending. Matrix Market lines are short; this only bounds
 * the memory a damaged or hostile file can make the reader take. */
#define SPMVPORT_MTX_MAX_LINE ((size_t)16 << 20)
#define SPMVPORT_MTX_BLOCK ((size_t)256 << 10)   /* first size of the read buffer */
#define SPMVPORT_MTX_FIRST_CAP ((int64_t)1 << 20) /* first capacity of the triplet arrays */
#define SPMVPORT_MTX_TOKEN_SHOWN 40               /* characters of a bad token quoted in a message */

/* ==================================================================================================== */
/* === Messages ======================================================================================= */
/* ==================================================================================================== */

/* Write "PATH:LINE: " followed by the formatted text into msg; returns status. */
static spmv_status_t spmvport_mtx_fail(char *msg, size_t msglen, const char *path, int64_t line,
                                       spmv_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

static spmv_status_t spmvport_mtx_fail(char *msg, size_t msglen, const char *path, int64_t line,
                                       spmv_status_t status, const char *fmt, ...)
{
    if (msg == NULL || msglen == 0) return status;
    int head = snprintf(msg, msglen, "%s:%lld: ", path, (long long)(line < 1 ? 1 : line));
    if (head >= 0 && (size_t)head < msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + head, msglen - (size_t)head, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* ==================================================================================================== */
/* === Line reader ==================================================================================== */
/* ==================================================================================================== */

/* Decompressed bytes buf[begin, end) are read but not yet cut into lines; buf[end] is always writable so
 * the last line of a file without a final newline can be terminated in place. */
typedef struct spmvport_mtx_reader {
    gzFile gz;
    const char *path;
    char *msg;
    size_t msglen;
    char *buf;
    size_t cap, begin, end;
    int eof;        /* gzread has reported the end of the input */
    int64_t lineno; /* number of the line last returned (1-based); 0 before the first */
} spmvport_mtx_reader;

static spmv_status_t spmvport_mtx_reader_open(spmvport_mtx_reader *r, const char *path, char *msg,
                                              size_t msglen)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->msg = msg;
    r->msglen = msglen;
    r->buf = spmvport_malloc_array(SPMVPORT_MTX_BLOCK, 1);
    if (r->buf == NULL) {
        spmvport_msg(msg, msglen, "%s: out of memory for the read buffer", path);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    r->cap = SPMVPORT_MTX_BLOCK;
    errno = 0;
    r->gz = gzopen(path, "rb");
    if (r->gz == NULL) {
        int err = errno; /* 0 when only gzopen's own allocation failed */
        spmvport_msg(msg, msglen, "%s: cannot open: %s", path, err ? strerror(err) : "out of memory");
        free(r->buf);
        r->buf = NULL;
        return err ? SPMV_STATUS_IO_ERROR : SPMV_STATUS_OUT_OF_MEMORY;
    }
    gzbuffer(r->gz, (unsigned)SPMVPORT_MTX_BLOCK); /* before the first read, as zlib requires */
    return SPMV_STATUS_SUCCESS;
}

static void spmvport_mtx_reader_close(spmvport_mtx_reader *r)
{
    if (r->gz != NULL) gzclose_r(r->gz);
    free(r->buf);
    r->gz = NULL;
    r->buf = NULL;
}

/* A read error of zlib, or of the file system under it, as an IO_ERROR naming the line being read. */
static spmv_status_t spmvport_mtx_read_error(spmvport_mtx_reader *r)
{
    int errnum = Z_OK;
    const char *zmsg = gzerror(r->gz, &errnum);
    if (errnum == Z_ERRNO)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno + 1, SPMV_STATUS_IO_ERROR,
                                 "read error: %s", strerror(errno));
    return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno + 1, SPMV_STATUS_IO_ERROR,
                             "corrupt or truncated gzip data (zlib: %s)", zmsg ? zmsg : "unknown error");
}

/* Move the unread bytes to the front, grow the buffer if one line fills it, and read more. */
static spmv_status_t spmvport_mtx_reader_fill(spmvport_mtx_reader *r)
{
    size_t pending = r->end - r->begin;
    if (r->begin > 0) memmove(r->buf, r->buf + r->begin, pending);
    r->begin = 0;
    r->end = pending;
    if (r->end + 1 >= r->cap) {
        /* the buffer holds part of a single line only */
        if (r->cap > SPMVPORT_MTX_MAX_LINE + 1)
            return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno + 1, SPMV_STATUS_PARSE_ERROR,
                                     "line too long (more than %zu bytes)", SPMVPORT_MTX_MAX_LINE);
        size_t cap = 2 * r->cap;
        if (cap > SPMVPORT_MTX_MAX_LINE + 2) cap = SPMVPORT_MTX_MAX_LINE + 2; /* line + '\n' + NUL */
        char *grown = spmvport_malloc_array(cap, 1);
        if (grown == NULL)
            return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno + 1, SPMV_STATUS_OUT_OF_MEMORY,
                                     "out of memory for a line of %zu bytes", r->end);
        memcpy(grown, r->buf, r->end);
        free(r->buf);
        r->buf = grown;
        r->cap = cap;
    }
    size_t room = r->cap - 1 - r->end;
    if (room > (size_t)INT_MAX) room = (size_t)INT_MAX;
    int got = gzread(r->gz, r->buf + r->end, (unsigned)room);
    if (got < 0) return spmvport_mtx_read_error(r);
    if (got == 0) {
        /* a truncated gzip stream ends without -1; zlib only records Z_BUF_ERROR */
        int errnum = Z_OK;
        gzerror(r->gz, &errnum);
        if (errnum != Z_OK) return spmvport_mtx_read_error(r);
        r->eof = 1;
    }
    r->end += (size_t)got;
    return SPMV_STATUS_SUCCESS;
}

/* Next line, NUL-terminated in place, without its "\n" or "\r\n"; *line = NULL at the end of the file. */
static spmv_status_t spmvport_mtx_next_line(spmvport_mtx_reader *r, char **line)
{
    for (;;) {
        char *start = r->buf + r->begin;
        size_t pending = r->end - r->begin;
        char *newline = memchr(start, '\n', pending);
        if (newline != NULL || (r->eof && pending > 0)) {
            size_t len = newline != NULL ? (size_t)(newline - start) : pending;
            r->begin += newline != NULL ? len + 1 : len;
            r->lineno++;
            if (len > SPMVPORT_MTX_MAX_LINE)
                return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                         "line too long (more than %zu bytes)", SPMVPORT_MTX_MAX_LINE);
            if (len > 0 && start[len - 1] == '\r') len--;
            start[len] = '\0';
            /* an embedded NUL would hide the rest of the line from the parser */
            if (memchr(start, '\0', len) != NULL)
                return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                         "NUL byte in a text line (binary data?)");
            *line = start;
            return SPMV_STATUS_SUCCESS;
        }
        if (r->eof) {
            *line = NULL;
            return SPMV_STATUS_SUCCESS;
        }
        spmv_status_t status = spmvport_mtx_reader_fill(r);
        if (status != SPMV_STATUS_SUCCESS) return status;
    }
}

/* ==================================================================================================== */
/* === Tokens and numbers ============================================================================= */
/* ==================================================================================================== */

static int spmvport_mtx_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Next blank-separated token of *cursor, NUL-terminated in place; NULL when the line has no more. */
static char *spmvport_mtx_token(char **cursor)
{
    char *s = *cursor;
    while (spmvport_mtx_is_blank(*s)) s++;
    if (*s == '\0') {
        *cursor = s;
        return NULL;
    }
    char *token = s;
    while (*s != '\0' && !spmvport_mtx_is_blank(*s)) s++;
    if (*s != '\0') *s++ = '\0';
    *cursor = s;
    return token;
}

/* Blank lines and comment lines carry nothing. */
static int spmvport_mtx_is_skippable(const char *line)
{
    while (spmvport_mtx_is_blank(*line)) line++;
    return *line == '\0' || *line == '%';
}

/* Case-insensitive comparison with a lower-case ASCII word (strcasecmp is not C99). */
static int spmvport_mtx_word_is(const char *token, const char *lower)
{
    for (; *token != '\0' && *lower != '\0'; token++, lower++) {
        char c = *token;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != *lower) return 0;
    }
    return *token == '\0' && *lower == '\0';
}

/* Whole-token decimal integer with an optional sign. */
static int spmvport_mtx_is_integer_text(const char *token)
{
    if (*token == '+' || *token == '-') token++;
    if (*token < '0' || *token > '9') return 0;
    while (*token >= '0' && *token <= '9') token++;
    return *token == '\0';
}

typedef enum { SPMVPORT_NUM_OK, SPMVPORT_NUM_BAD, SPMVPORT_NUM_RANGE } spmvport_num_result;

/* Whole-token decimal integer; by hand because strtoll (locale, base detection) dominated the parse time. */
static spmvport_num_result spmvport_mtx_parse_int64(const char *token, int64_t *value)
{
    const char *s = token;
    int negative = *s == '-';
    if (*s == '+' || *s == '-') s++;
    if (*s < '0' || *s > '9') return SPMVPORT_NUM_BAD;
    uint64_t v = 0;
    int range = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > ((uint64_t)INT64_MAX - 9) / 10) range = 1; /* keep scanning: "123abc" must still be BAD */
        else v = 10 * v + (uint64_t)(*s - '0');
    }
    if (*s != '\0') return SPMVPORT_NUM_BAD;
    if (range) return SPMVPORT_NUM_RANGE;
    *value = negative ? -(int64_t)v : (int64_t)v;
    return SPMVPORT_NUM_OK;
}

/* A real number as strtod reads it (NaN and Inf included; the matrix layer applies the NaN policy). */
static int spmvport_mtx_parse_real(const char *token, double *value)
{
    char *end;
    *value = strtod(token, &end); /* ERANGE on under/overflow is fine: the rounded value is what we want */
    return end != token && *end == '\0';
}

/* ==================================================================================================== */
/* === Header: banner, comments, size line ============================================================ */
/* ==================================================================================================== */

typedef enum { SPMVPORT_MTX_REAL, SPMVPORT_MTX_INTEGER, SPMVPORT_MTX_PATTERN } spmvport_mtx_field;
typedef enum { SPMVPORT_MTX_GENERAL, SPMVPORT_MTX_SYMMETRIC, SPMVPORT_MTX_SKEW } spmvport_mtx_symmetry;

typedef struct spmvport_mtx_header {
    spmvport_mtx_field field;
    spmvport_mtx_symmetry symmetry;
    int32_t m, n;
    int64_t nnz;       /* entries announced (stored entries) */
    int64_t size_line; /* line number of the size line */
} spmvport_mtx_header;

/* The banner's FORMAT, FIELD and SYMMETRY words (the first two words are checked by the caller). */
static spmv_status_t spmvport_mtx_banner_words(spmvport_mtx_reader *r, char *cursor, spmvport_mtx_header *h)
{
    const char *format = spmvport_mtx_token(&cursor);
    const char *field = format ? spmvport_mtx_token(&cursor) : NULL;
    const char *symmetry = field ? spmvport_mtx_token(&cursor) : NULL;
    const char *extra = symmetry ? spmvport_mtx_token(&cursor) : NULL;
    int64_t ln = r->lineno;
    if (symmetry == NULL)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_PARSE_ERROR,
                                 "incomplete banner: expected '%%%%MatrixMarket matrix FORMAT FIELD SYMMETRY'");
    if (extra != NULL)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_PARSE_ERROR,
                                 "unexpected word '%.*s' after the banner's symmetry", SPMVPORT_MTX_TOKEN_SHOWN,
                                 extra);
    if (spmvport_mtx_word_is(format, "array"))
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_NOT_SUPPORTED,
                                 "dense 'array' format is not supported (only 'coordinate')");
    if (!spmvport_mtx_word_is(format, "coordinate"))
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_PARSE_ERROR,
                                 "unknown format '%.*s' in the banner (expected 'coordinate')",
                                 SPMVPORT_MTX_TOKEN_SHOWN, format);

    if (spmvport_mtx_word_is(field, "real")) h->field = SPMVPORT_MTX_REAL;
    else if (spmvport_mtx_word_is(field, "integer")) h->field = SPMVPORT_MTX_INTEGER;
    else if (spmvport_mtx_word_is(field, "pattern")) h->field = SPMVPORT_MTX_PATTERN;
    else if (spmvport_mtx_word_is(field, "complex"))
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_NOT_SUPPORTED,
                                 "complex field is not supported (real, integer or pattern)");
    else
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_PARSE_ERROR,
                                 "unknown field '%.*s' in the banner (expected real, integer, pattern)",
                                 SPMVPORT_MTX_TOKEN_SHOWN, field);

    if (spmvport_mtx_word_is(symmetry, "general")) h->symmetry = SPMVPORT_MTX_GENERAL;
    else if (spmvport_mtx_word_is(symmetry, "symmetric")) h->symmetry = SPMVPORT_MTX_SYMMETRIC;
    else if (spmvport_mtx_word_is(symmetry, "skew-symmetric")) h->symmetry = SPMVPORT_MTX_SKEW;
    else if (spmvport_mtx_word_is(symmetry, "hermitian"))
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_NOT_SUPPORTED,
                                 "hermitian symmetry is not supported");
    else
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_PARSE_ERROR,
                                 "unknown symmetry '%.*s' in the banner (expected general, symmetric, "
                                 "skew-symmetric)", SPMVPORT_MTX_TOKEN_SHOWN, symmetry);

    if (h->field == SPMVPORT_MTX_PATTERN && h->symmetry == SPMVPORT_MTX_SKEW)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, ln, SPMV_STATUS_PARSE_ERROR,
                                 "a pattern matrix cannot be skew-symmetric");
    return SPMV_STATUS_SUCCESS;
}

/* The first line must be the banner. */
static spmv_status_t spmvport_mtx_read_banner(spmvport_mtx_reader *r, spmvport_mtx_header *h)
{
    char *line;
    spmv_status_t status = spmvport_mtx_next_line(r, &line);
    if (status != SPMV_STATUS_SUCCESS) return status;
    if (line == NULL)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, 1, SPMV_STATUS_PARSE_ERROR,
                                 "empty file (expected a %%%%MatrixMarket banner)");
    char *cursor = line;
    const char *first = spmvport_mtx_token(&cursor);
    if (first == NULL || !spmvport_mtx_word_is(first, "%%matrixmarket"))
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "missing %%%%MatrixMarket banner (the first line starts with '%.*s')",
                                 SPMVPORT_MTX_TOKEN_SHOWN, line);
    const char *object = spmvport_mtx_token(&cursor);
    if (object == NULL || !spmvport_mtx_word_is(object, "matrix"))
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "unknown object '%.*s' in the banner (expected 'matrix')",
                                 SPMVPORT_MTX_TOKEN_SHOWN, object ? object : "");
    return spmvport_mtx_banner_words(r, cursor, h);
}

/* One of M, N, NNZ: a non-negative integer that fits int32. */
static spmv_status_t spmvport_mtx_size_field(spmvport_mtx_reader *r, const char *token, const char *what,
                                             int64_t *value)
{
    spmvport_num_result res = spmvport_mtx_parse_int64(token, value);
    if (res == SPMVPORT_NUM_BAD)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "%s '%.*s' in the size line is not an integer", what, SPMVPORT_MTX_TOKEN_SHOWN,
                                 token);
    if (res == SPMVPORT_NUM_OK && *value < 0)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "%s %lld in the size line is negative", what, (long long)*value);
    if (res == SPMVPORT_NUM_RANGE || *value > INT32_MAX)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_OVERFLOW,
                                 "%s %.*s exceeds the 32-bit index limit %ld", what, SPMVPORT_MTX_TOKEN_SHOWN,
                                 token, (long)INT32_MAX);
    return SPMV_STATUS_SUCCESS;
}

/* Skip comments and blank lines, then parse "M N NNZ". */
static spmv_status_t spmvport_mtx_read_size(spmvport_mtx_reader *r, spmvport_mtx_header *h)
{
    char *line;
    do {
        spmv_status_t status = spmvport_mtx_next_line(r, &line);
        if (status != SPMV_STATUS_SUCCESS) return status;
    } while (line != NULL && spmvport_mtx_is_skippable(line));
    if (line == NULL)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "end of file before the size line 'M N NNZ'");
    h->size_line = r->lineno;
    char *cursor = line;
    const char *what[3] = {"number of rows", "number of columns", "number of entries"};
    int64_t v[3];
    for (int k = 0; k < 3; k++) {
        const char *token = spmvport_mtx_token(&cursor);
        if (token == NULL)
            return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                     "size line needs 3 integers 'M N NNZ', found %d", k);
        spmv_status_t status = spmvport_mtx_size_field(r, token, what[k], &v[k]);
        if (status != SPMV_STATUS_SUCCESS) return status;
    }
    const char *extra = spmvport_mtx_token(&cursor);
    if (extra != NULL)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "unexpected '%.*s' after 'M N NNZ' in the size line", SPMVPORT_MTX_TOKEN_SHOWN,
                                 extra);
    h->m = (int32_t)v[0];
    h->n = (int32_t)v[1];
    h->nnz = v[2];
    if (h->symmetry != SPMVPORT_MTX_GENERAL) {
        if (h->m != h->n)
            return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                     "a symmetric or skew-symmetric matrix must be square, not %ld x %ld",
                                     (long)h->m, (long)h->n);
        if (2 * h->nnz > INT32_MAX)
            return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_OVERFLOW,
                                     "%lld stored entries of a symmetric matrix expand to up to %lld, beyond "
                                     "the 32-bit index limit %ld", (long long)h->nnz, (long long)(2 * h->nnz),
                                     (long)INT32_MAX);
    }
    return SPMV_STATUS_SUCCESS;
}

/* ==================================================================================================== */
/* === Entries ======================================================================================== */
/* ==================================================================================================== */

/* COO triplets, 0-based, growing geometrically up to the announced count. */
typedef struct spmvport_mtx_triplets {
    int32_t *row, *col;
    double *val;
    int64_t count, cap;
} spmvport_mtx_triplets;

static void spmvport_mtx_triplets_free(spmvport_mtx_triplets *t)
{
    free(t->row);
    free(t->col);
    free(t->val);
    memset(t, 0, sizeof *t);
}

/* Make room for `need` triplets; on failure the old arrays stay valid (and are freed by the caller). */
static int spmvport_mtx_triplets_reserve(spmvport_mtx_triplets *t, int64_t need)
{
    if (need <= t->cap) return 1;
    if ((uint64_t)need > SIZE_MAX) return 0;
    int32_t *row = spmvport_malloc_array((size_t)need, sizeof *row);
    int32_t *col = spmvport_malloc_array((size_t)need, sizeof *col);
    double *val = spmvport_malloc_array((size_t)need, sizeof *val);
    if (row == NULL || col == NULL || val == NULL) {
        free(row);
        free(col);
        free(val);
        return 0;
    }
    if (t->count > 0) {
        memcpy(row, t->row, (size_t)t->count * sizeof *row);
        memcpy(col, t->col, (size_t)t->count * sizeof *col);
        memcpy(val, t->val, (size_t)t->count * sizeof *val);
    }
    free(t->row);
    free(t->col);
    free(t->val);
    t->row = row;
    t->col = col;
    t->val = val;
    t->cap = need;
    return 1;
}

/* A 1-based row or column index in [1, limit], returned 0-based. */
static spmv_status_t spmvport_mtx_index(spmvport_mtx_reader *r, const char *token, const char *what,
                                        int32_t limit, int32_t *index)
{
    int64_t v = 0;
    spmvport_num_result res = spmvport_mtx_parse_int64(token, &v);
    if (res == SPMVPORT_NUM_BAD)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "%s index '%.*s' is not an integer", what, SPMVPORT_MTX_TOKEN_SHOWN, token);
    if (res == SPMVPORT_NUM_RANGE || v < 1 || v > limit)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "%s index %.*s out of range [1, %ld]", what, SPMVPORT_MTX_TOKEN_SHOWN, token,
                                 (long)limit);
    *index = (int32_t)(v - 1);
    return SPMV_STATUS_SUCCESS;
}

/* The value field of an entry line, by the banner's field. */
static spmv_status_t spmvport_mtx_value(spmvport_mtx_reader *r, const spmvport_mtx_header *h, const char *token,
                                        double *value)
{
    if (token == NULL)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "missing value: entries of %s matrix are 'ROW COL VALUE'",
                                 h->field == SPMVPORT_MTX_INTEGER ? "an integer" : "a real");
    if (h->field == SPMVPORT_MTX_INTEGER && !spmvport_mtx_is_integer_text(token))
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "value '%.*s' is not an integer (the banner says 'integer')",
                                 SPMVPORT_MTX_TOKEN_SHOWN, token);
    /* integers beyond 2^53 round like any double; strtod reads them whatever their length */
    if (!spmvport_mtx_parse_real(token, value))
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "value '%.*s' is not a number", SPMVPORT_MTX_TOKEN_SHOWN, token);
    return SPMV_STATUS_SUCCESS;
}

/* Parse "ROW COL [VALUE]" into triplet k (room already reserved). */
static spmv_status_t spmvport_mtx_entry(spmvport_mtx_reader *r, const spmvport_mtx_header *h, char *line,
                                        spmvport_mtx_triplets *t)
{
    char *cursor = line;
    const char *row_text = spmvport_mtx_token(&cursor);
    const char *col_text = spmvport_mtx_token(&cursor);
    if (col_text == NULL)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "missing column index: entries are 'ROW COL%s'",
                                 h->field == SPMVPORT_MTX_PATTERN ? "" : " VALUE");
    int32_t i, j;
    double value = 1.0; /* pattern entries */
    spmv_status_t status = spmvport_mtx_index(r, row_text, "row", h->m, &i);
    if (status == SPMV_STATUS_SUCCESS) status = spmvport_mtx_index(r, col_text, "column", h->n, &j);
    if (status == SPMV_STATUS_SUCCESS && h->field != SPMVPORT_MTX_PATTERN)
        status = spmvport_mtx_value(r, h, spmvport_mtx_token(&cursor), &value);
    if (status != SPMV_STATUS_SUCCESS) return status;
    const char *extra = spmvport_mtx_token(&cursor);
    if (extra != NULL)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "unexpected '%.*s' after the entry%s", SPMVPORT_MTX_TOKEN_SHOWN, extra,
                                 h->field == SPMVPORT_MTX_PATTERN ? " (a pattern entry has no value)" : "");
    if (h->symmetry == SPMVPORT_MTX_SKEW && i == j)
        return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                 "diagonal entry (%ld, %ld) in a skew-symmetric matrix (its diagonal is zero)",
                                 (long)i + 1, (long)j + 1);
    t->row[t->count] = i;
    t->col[t->count] = j;
    t->val[t->count] = value;
    t->count++;
    return SPMV_STATUS_SUCCESS;
}

/* Read exactly h->nnz entries, then make sure only comments and blank lines follow. */
static spmv_status_t spmvport_mtx_read_entries(spmvport_mtx_reader *r, const spmvport_mtx_header *h,
                                               spmvport_mtx_triplets *t)
{
    char *line;
    while (t->count < h->nnz) {
        spmv_status_t status = spmvport_mtx_next_line(r, &line);
        if (status != SPMV_STATUS_SUCCESS) return status;
        if (line == NULL)
            return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                     "truncated file: expected %lld entries, found %lld", (long long)h->nnz,
                                     (long long)t->count);
        if (spmvport_mtx_is_skippable(line)) continue;
        if (t->count == t->cap) {
            int64_t cap = t->cap < SPMVPORT_MTX_FIRST_CAP ? SPMVPORT_MTX_FIRST_CAP : 2 * t->cap;
            if (cap > h->nnz) cap = h->nnz;
            if (!spmvport_mtx_triplets_reserve(t, cap))
                return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_OUT_OF_MEMORY,
                                         "out of memory for %lld entries", (long long)cap);
        }
        status = spmvport_mtx_entry(r, h, line, t);
        if (status != SPMV_STATUS_SUCCESS) return status;
    }
    for (;;) {
        spmv_status_t status = spmvport_mtx_next_line(r, &line);
        if (status != SPMV_STATUS_SUCCESS) return status;
        if (line == NULL) return SPMV_STATUS_SUCCESS;
        if (!spmvport_mtx_is_skippable(line))
            return spmvport_mtx_fail(r->msg, r->msglen, r->path, r->lineno, SPMV_STATUS_PARSE_ERROR,
                                     "more entries than the %lld announced on line %lld", (long long)h->nnz,
                                     (long long)h->size_line);
    }
}

/* Add the mirror (j, i) of every off-diagonal entry; skew-symmetric mirrors are negated. 2*nnz fits int32
 * (checked on the size line). */
static spmv_status_t spmvport_mtx_expand(const char *path, const spmvport_mtx_header *h, spmvport_mtx_triplets *t,
                                         char *msg, size_t msglen)
{
    int64_t stored = t->count, mirrors = 0;
    for (int64_t k = 0; k < stored; k++) mirrors += t->row[k] != t->col[k];
    if (!spmvport_mtx_triplets_reserve(t, stored + mirrors)) {
        spmvport_msg(msg, msglen, "%s: out of memory expanding %lld symmetric entries", path, (long long)stored);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    double sign = h->symmetry == SPMVPORT_MTX_SKEW ? -1.0 : 1.0;
    for (int64_t k = 0; k < stored; k++) {
        if (t->row[k] == t->col[k]) continue;
        t->row[t->count] = t->col[k];
        t->col[t->count] = t->row[k];
        t->val[t->count] = sign * t->val[k];
        t->count++;
    }
    return SPMV_STATUS_SUCCESS;
}

/* ==================================================================================================== */
/* === spmvport_mtx_read ============================================================================== */
/* ==================================================================================================== */

spmv_status_t spmvport_mtx_read(const char *path, spmvport_csr *out, char *msg, size_t msglen)
{
    if (out != NULL) memset(out, 0, sizeof *out);
    if (path == NULL || out == NULL) {
        spmvport_msg(msg, msglen, "spmvport_mtx_read: %s is NULL", path == NULL ? "path" : "out");
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    spmvport_mtx_reader reader;
    spmv_status_t status = spmvport_mtx_reader_open(&reader, path, msg, msglen);
    if (status != SPMV_STATUS_SUCCESS) return status;

    spmvport_mtx_header header;
    spmvport_mtx_triplets triplets;
    memset(&header, 0, sizeof header);
    memset(&triplets, 0, sizeof triplets);
    status = spmvport_mtx_read_banner(&reader, &header);
    if (status == SPMV_STATUS_SUCCESS) status = spmvport_mtx_read_size(&reader, &header);
    if (status == SPMV_STATUS_SUCCESS) status = spmvport_mtx_read_entries(&reader, &header, &triplets);
    spmvport_mtx_reader_close(&reader);
    if (status == SPMV_STATUS_SUCCESS && header.symmetry != SPMVPORT_MTX_GENERAL)
        status = spmvport_mtx_expand(path, &header, &triplets, msg, msglen);
    if (status == SPMV_STATUS_SUCCESS) {
        char inner[SPMVPORT_MSG_LEN];
        inner[0] = '\0';
        status = spmvport_csr_from_coo(out, header.m, header.n, triplets.count, triplets.row, triplets.col,
                                       triplets.val, inner, sizeof inner);
        if (status != SPMV_STATUS_SUCCESS) {
            spmvport_msg(msg, msglen, "%s: %s", path, inner);
            spmvport_csr_free(out);
            memset(out, 0, sizeof *out);
        }
    }
    spmvport_mtx_triplets_free(&triplets);
    return status;
}

/* ==================================================================================================== */
/* === spmvport_mtx_write ============================================================================= */
/* ==================================================================================================== */

#define SPMVPORT_MTX_OUT_BUF ((size_t)64 << 10)
#define SPMVPORT_MTX_OUT_LINE 128 /* longer than any line we format: 2 x 11 digits, 24 for %.17g */

/* Text is formatted into buf and handed to gzwrite in large pieces (gzprintf would format line by line). */
typedef struct spmvport_mtx_writer {
    gzFile gz;
    char buf[SPMVPORT_MTX_OUT_BUF];
    size_t used;
    int failed;
} spmvport_mtx_writer;

static void spmvport_mtx_flush(spmvport_mtx_writer *w)
{
    if (w->used > 0 && !w->failed && gzwrite(w->gz, w->buf, (unsigned)w->used) != (int)w->used) w->failed = 1;
    w->used = 0;
}

static void spmvport_mtx_put(spmvport_mtx_writer *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void spmvport_mtx_put(spmvport_mtx_writer *w, const char *fmt, ...)
{
    if (SPMVPORT_MTX_OUT_BUF - w->used < SPMVPORT_MTX_OUT_LINE) spmvport_mtx_flush(w);
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(w->buf + w->used, SPMVPORT_MTX_OUT_BUF - w->used, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= SPMVPORT_MTX_OUT_BUF - w->used) w->failed = 1;
    else w->used += (size_t)len;
}

/* The CSR arrays are walked as given; a row pointer that decreases or leaves [0, nnz] would read outside
 * the arrays, so it is checked on the way. */
static spmv_status_t spmvport_mtx_check_csr(const spmvport_csr *A, char *msg, size_t msglen)
{
    if (A->m < 0 || A->n < 0 || A->nnz < 0 || A->row_ptr == NULL ||
        (A->nnz > 0 && (A->col_idx == NULL || A->val == NULL))) {
        spmvport_msg(msg, msglen, "spmvport_mtx_write: invalid CSR (m %ld, n %ld, nnz %ld)", (long)A->m,
                     (long)A->n, (long)A->nnz);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (A->row_ptr[0] != 0 || A->row_ptr[A->m] != A->nnz) {
        spmvport_msg(msg, msglen, "spmvport_mtx_write: row_ptr must run from 0 to nnz %ld", (long)A->nnz);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    for (int32_t i = 0; i < A->m; i++)
        if (A->row_ptr[i + 1] < A->row_ptr[i]) {
            spmvport_msg(msg, msglen, "spmvport_mtx_write: row_ptr decreases at row %ld", (long)i);
            return SPMV_STATUS_INVALID_ARGUMENT;
        }
    return SPMV_STATUS_SUCCESS;
}

static int spmvport_mtx_ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

spmv_status_t spmvport_mtx_write(const char *path, const spmvport_csr *A, char *msg, size_t msglen)
{
    if (path == NULL || A == NULL) {
        spmvport_msg(msg, msglen, "spmvport_mtx_write: %s is NULL", path == NULL ? "path" : "A");
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    spmv_status_t status = spmvport_mtx_check_csr(A, msg, msglen);
    if (status != SPMV_STATUS_SUCCESS) return status;
    spmvport_mtx_writer *w = malloc(sizeof *w); /* 64 KiB: too much for some threads' stacks */
    if (w == NULL) {
        spmvport_msg(msg, msglen, "%s: out of memory for the write buffer", path);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    w->used = 0;
    w->failed = 0;
    errno = 0;
    /* "wT" writes plain text through the same interface */
    w->gz = gzopen(path, spmvport_mtx_ends_with(path, ".gz") ? "wb" : "wT");
    if (w->gz == NULL) {
        int err = errno; /* 0 when only gzopen's own allocation failed */
        spmvport_msg(msg, msglen, "%s: cannot open for writing: %s", path, err ? strerror(err) : "out of memory");
        free(w);
        return err ? SPMV_STATUS_IO_ERROR : SPMV_STATUS_OUT_OF_MEMORY;
    }
    spmvport_mtx_put(w, "%%%%MatrixMarket matrix coordinate real general\n%% written by libspmvport\n");
    spmvport_mtx_put(w, "%ld %ld %ld\n", (long)A->m, (long)A->n, (long)A->nnz);
    for (int32_t i = 0; i < A->m && !w->failed; i++)
        for (int32_t p = A->row_ptr[i]; p < A->row_ptr[i + 1]; p++)
            spmvport_mtx_put(w, "%ld %ld %.17g\n", (long)i + 1, (long)A->col_idx[p] + 1, A->val[p]);
    spmvport_mtx_flush(w);

    int errnum = Z_OK;
    const char *zmsg = w->failed ? gzerror(w->gz, &errnum) : NULL;
    if (w->failed)
        spmvport_msg(msg, msglen, "%s: write error: %s", path,
                     errnum == Z_ERRNO ? strerror(errno) : (zmsg ? zmsg : "formatting failed"));
    errno = 0;
    int closed = gzclose_w(w->gz); /* flushes: a full disk may only show here */
    if (!w->failed && closed != Z_OK)
        spmvport_msg(msg, msglen, "%s: write error on close: %s", path,
                     closed == Z_ERRNO && errno ? strerror(errno) : "zlib could not finish the file");
    status = (w->failed || closed != Z_OK) ? SPMV_STATUS_IO_ERROR : SPMV_STATUS_SUCCESS;
    free(w);
    /* A partial file is left as it is (the path may not be a regular file); reading it back fails with
     * "expected N entries", since the size line is written first. */
    return status;
}
