/*
 * test_mmio.c -- Matrix Market reading and writing through the public API.
 *
 * Malformed files must fail with the exact status and a message "PATH:LINE: ..." naming the right line and
 * the problem; well-formed variants (comments, blank lines, CRLF, tabs, gzip, symmetry) must give exactly the
 * expected CSR; every shared matrix must survive read -> write -> read bit for bit.
 *
 * Files are written at test time into SPMVPORT_TEST_TMPDIR under names that carry the process id and the test's
 * tag: Criterion runs each test in its own process, possibly in parallel.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "spmvport.h"

#ifndef SPMVPORT_SHARED_MATRICES
#error "SPMVPORT_SHARED_MATRICES must name the shared matrix directory (the build defines it)"
#endif
#ifndef SPMVPORT_TEST_TMPDIR
#error "SPMVPORT_TEST_TMPDIR must name a writable scratch directory (the build defines it)"
#endif

#define PATH_LEN 4096

/* ==================================================================================================== */
/* === Helpers ======================================================================================== */
/* ==================================================================================================== */

static void scratch_path(char *path, const char *tag, const char *ext)
{
    snprintf(path, PATH_LEN, "%s/mmio_%ld_%s%s", SPMVPORT_TEST_TMPDIR, (long)getpid(), tag, ext);
}

/* Write bytes verbatim ("wb": CRLF and NUL bytes stay as given). */
static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, len, f), len, "short write to %s", path);
    cr_assert_eq(fclose(f), 0, "cannot close %s", path);
}

static void write_gzip(const char *path, const char *text)
{
    gzFile gz = gzopen(path, "wb");
    cr_assert_not_null(gz, "gzopen %s failed", path);
    cr_assert_eq(gzwrite(gz, text, (unsigned)strlen(text)), (int)strlen(text));
    cr_assert_eq(gzclose(gz), Z_OK);
}

/* Read `text` as a file and expect failure with `want`, a message starting "PATH:LINE: " (line > 0) and
 * containing `word`. */
static void expect_failure(const char *tag, const char *text, spmv_status_t want, int line, const char *word)
{
    char path[PATH_LEN], prefix[PATH_LEN + 32];
    scratch_path(path, tag, ".mtx");
    write_bytes(path, text, strlen(text));
    spmv_matrix_t *A = NULL;
    spmv_status_t st = spmv_matrix_read_mtx(&A, path, SPMV_F64);
    const char *msg = spmv_last_error(NULL);
    cr_expect_eq(st, want, "%s: got %s, want %s; message: %s", tag, spmv_status_string(st),
                 spmv_status_string(want), msg);
    cr_expect_null(A, "%s: no matrix on failure", tag);
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    cr_expect(strncmp(msg, prefix, strlen(prefix)) == 0, "%s: message should start with '%s': %s", tag, prefix, msg);
    cr_expect(strstr(msg, word) != NULL, "%s: message should mention '%s': %s", tag, word, msg);
    spmv_matrix_destroy(A);
    remove(path);
}

/* One expected entry of a small matrix (0-based). */
typedef struct entry {
    int32_t row, col;
    double val;
} entry;

/* Compare a matrix with the expected entries, given in CSR order (sorted by row, then column). */
static void expect_matrix(const spmv_matrix_t *A, int32_t m, int32_t n, const entry *want, int32_t count)
{
    int32_t am, an, annz;
    const int32_t *rp, *ci;
    const void *vals;
    cr_assert_eq(spmv_matrix_get_size(A, &am, &an, &annz, NULL), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_get_csr(A, &rp, &ci, &vals), SPMV_STATUS_SUCCESS);
    cr_assert_eq(am, m, "rows %d, want %d", am, m);
    cr_assert_eq(an, n, "columns %d, want %d", an, n);
    cr_assert_eq(annz, count, "nnz %d, want %d", annz, count);
    const double *v = vals;
    int32_t k = 0;
    for (int32_t i = 0; i < m; i++)
        for (int32_t p = rp[i]; p < rp[i + 1]; p++, k++) {
            cr_assert_lt(k, count);
            cr_expect(i == want[k].row && ci[p] == want[k].col && v[p] == want[k].val,
                      "entry %d: (%d, %d, %.17g), want (%d, %d, %.17g)", k, i, ci[p], v[p], want[k].row,
                      want[k].col, want[k].val);
        }
    cr_assert_eq(k, count);
}

/* Read `text` (written as a file) and compare with the expected matrix. */
static void expect_read(const char *tag, const char *text, int32_t m, int32_t n, const entry *want, int32_t count)
{
    char path[PATH_LEN];
    scratch_path(path, tag, ".mtx");
    write_bytes(path, text, strlen(text));
    spmv_matrix_t *A = NULL;
    spmv_status_t st = spmv_matrix_read_mtx(&A, path, SPMV_F64);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "%s: %s: %s", tag, spmv_status_string(st), spmv_last_error(NULL));
    expect_matrix(A, m, n, want, count);
    spmv_matrix_destroy(A);
    remove(path);
}

#define BANNER "%%MatrixMarket matrix coordinate real general\n"

/* ==================================================================================================== */
/* === Banner ========================================================================================= */
/* ==================================================================================================== */

Test(mmio_bad, banner_unknown_field)
{
    expect_failure("unknown_field", "%%MatrixMarket matrix coordinate reel general\n2 2 1\n1 1 1\n",
                   SPMV_STATUS_PARSE_ERROR, 1, "'reel'");
}

Test(mmio_bad, banner_unknown_symmetry)
{
    expect_failure("unknown_sym", "%%MatrixMarket matrix coordinate real generl\n2 2 1\n1 1 1\n",
                   SPMV_STATUS_PARSE_ERROR, 1, "'generl'");
}

Test(mmio_bad, banner_unknown_object)
{
    expect_failure("unknown_obj", "%%MatrixMarket vector coordinate real general\n2 2 1\n1 1 1\n",
                   SPMV_STATUS_PARSE_ERROR, 1, "'vector'");
}

Test(mmio_bad, banner_incomplete)
{
    expect_failure("banner_short", "%%MatrixMarket matrix coordinate real\n2 2 1\n1 1 1\n",
                   SPMV_STATUS_PARSE_ERROR, 1, "incomplete banner");
}

Test(mmio_bad, banner_extra_word)
{
    expect_failure("banner_long", "%%MatrixMarket matrix coordinate real general extra\n2 2 1\n1 1 1\n",
                   SPMV_STATUS_PARSE_ERROR, 1, "'extra'");
}

Test(mmio_bad, banner_missing)
{
    expect_failure("no_banner", "2 2 1\n1 1 1\n", SPMV_STATUS_PARSE_ERROR, 1, "missing %%MatrixMarket banner");
}

Test(mmio_bad, banner_single_percent)
{
    expect_failure("one_percent", "%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n",
                   SPMV_STATUS_PARSE_ERROR, 1, "banner");
}

Test(mmio_bad, complex_field)
{
    expect_failure("complex", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 0\n",
                   SPMV_STATUS_NOT_SUPPORTED, 1, "complex");
}

Test(mmio_bad, hermitian)
{
    expect_failure("hermitian", "%%MatrixMarket matrix coordinate real hermitian\n2 2 1\n1 1 1\n",
                   SPMV_STATUS_NOT_SUPPORTED, 1, "hermitian");
}

Test(mmio_bad, array_format)
{
    expect_failure("array", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", SPMV_STATUS_NOT_SUPPORTED,
                   1, "array");
}

Test(mmio_bad, pattern_skew_symmetric)
{
    expect_failure("pattern_skew", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n",
                   SPMV_STATUS_PARSE_ERROR, 1, "skew-symmetric");
}

/* ==================================================================================================== */
/* === Whole-file shape =============================================================================== */
/* ==================================================================================================== */

Test(mmio_bad, empty_file)
{
    expect_failure("empty", "", SPMV_STATUS_PARSE_ERROR, 1, "empty file");
}

Test(mmio_bad, only_comments)
{
    expect_failure("only_comments", "% a comment\n% another\n", SPMV_STATUS_PARSE_ERROR, 1, "banner");
}

Test(mmio_bad, only_banner)
{
    expect_failure("only_banner", BANNER, SPMV_STATUS_PARSE_ERROR, 1, "size line");
}

Test(mmio_bad, missing_size_line)
{
    expect_failure("no_size", BANNER "% comment\n\n% comment\n", SPMV_STATUS_PARSE_ERROR, 4, "size line");
}

Test(mmio_bad, nonexistent_file)
{
    char path[PATH_LEN];
    scratch_path(path, "does_not_exist", ".mtx");
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_read_mtx(&A, path, SPMV_F64), SPMV_STATUS_IO_ERROR);
    cr_assert_null(A);
    const char *msg = spmv_last_error(NULL);
    cr_expect(strstr(msg, path) != NULL, "message should name the path: %s", msg);
    cr_expect(strstr(msg, strerror(ENOENT)) != NULL, "message should give the reason: %s", msg);
}

Test(mmio_bad, directory)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_read_mtx(&A, SPMVPORT_TEST_TMPDIR, SPMV_F64), SPMV_STATUS_IO_ERROR, "%s",
                 spmv_last_error(NULL));
    cr_assert_null(A);
    cr_expect(strstr(spmv_last_error(NULL), SPMVPORT_TEST_TMPDIR) != NULL);
}

Test(mmio_bad, nul_byte)
{
    static const char text[] = BANNER "2 2 1\n1 1\0 7\n";
    char path[PATH_LEN];
    scratch_path(path, "nul", ".mtx");
    write_bytes(path, text, sizeof text - 1);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_read_mtx(&A, path, SPMV_F64), SPMV_STATUS_PARSE_ERROR);
    cr_expect(strstr(spmv_last_error(NULL), ":3: ") != NULL && strstr(spmv_last_error(NULL), "NUL") != NULL, "%s",
              spmv_last_error(NULL));
    remove(path);
}

/* A line longer than the reader's 16 MiB limit is refused, not truncated. */
Test(mmio_bad, line_too_long)
{
    size_t body = ((size_t)16 << 20) + 100;
    size_t head = strlen(BANNER);
    char *text = malloc(head + body + 2);
    cr_assert_not_null(text);
    memcpy(text, BANNER, head);
    text[head] = '%';
    memset(text + head + 1, 'x', body - 1);
    text[head + body] = '\n';
    char path[PATH_LEN];
    scratch_path(path, "too_long", ".mtx");
    write_bytes(path, text, head + body + 1);
    free(text);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_read_mtx(&A, path, SPMV_F64), SPMV_STATUS_PARSE_ERROR);
    cr_expect(strstr(spmv_last_error(NULL), ":2: ") != NULL && strstr(spmv_last_error(NULL), "too long") != NULL,
              "%s", spmv_last_error(NULL));
    remove(path);
}

/* ==================================================================================================== */
/* === Size line ====================================================================================== */
/* ==================================================================================================== */

Test(mmio_bad, size_negative)
{
    expect_failure("size_neg", BANNER "-3 3 1\n1 1 1\n", SPMV_STATUS_PARSE_ERROR, 2, "negative");
}

Test(mmio_bad, size_not_numeric)
{
    expect_failure("size_nan", BANNER "% c\n3 x 1\n1 1 1\n", SPMV_STATUS_PARSE_ERROR, 3, "'x'");
}

Test(mmio_bad, size_fractional)
{
    expect_failure("size_frac", BANNER "3 3 1.5\n1 1 1\n", SPMV_STATUS_PARSE_ERROR, 2, "not an integer");
}

Test(mmio_bad, size_two_numbers)
{
    expect_failure("size_two", BANNER "3 3\n1 1 1\n", SPMV_STATUS_PARSE_ERROR, 2, "3 integers");
}

Test(mmio_bad, size_four_numbers)
{
    expect_failure("size_four", BANNER "3 3 1 7\n1 1 1\n", SPMV_STATUS_PARSE_ERROR, 2, "'7'");
}

Test(mmio_bad, size_rows_over_int32)
{
    expect_failure("size_big_m", BANNER "3000000000 3 1\n1 1 1\n", SPMV_STATUS_OVERFLOW, 2, "32-bit");
}

Test(mmio_bad, size_nnz_over_int64)
{
    expect_failure("size_huge_nnz", BANNER "3 3 99999999999999999999999\n1 1 1\n", SPMV_STATUS_OVERFLOW, 2,
                   "32-bit");
}

Test(mmio_bad, symmetric_nnz_doubles_past_int32)
{
    /* 1.5e9 stored entries fit int32, their mirror images do not */
    expect_failure("sym_overflow",
                   "%%MatrixMarket matrix coordinate real symmetric\n2000000000 2000000000 1500000000\n1 1 1\n",
                   SPMV_STATUS_OVERFLOW, 2, "expand");
}

Test(mmio_bad, symmetric_not_square)
{
    expect_failure("sym_rect", "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n",
                   SPMV_STATUS_PARSE_ERROR, 2, "square");
}

/* ==================================================================================================== */
/* === Entries ======================================================================================== */
/* ==================================================================================================== */

Test(mmio_bad, row_index_zero)
{
    expect_failure("row0", BANNER "3 3 2\n1 1 1\n0 2 1\n", SPMV_STATUS_PARSE_ERROR, 4,
                   "row index 0 out of range [1, 3]");
}

Test(mmio_bad, column_index_zero)
{
    expect_failure("col0", BANNER "3 3 2\n1 1 1\n2 0 1\n", SPMV_STATUS_PARSE_ERROR, 4,
                   "column index 0 out of range [1, 3]");
}

Test(mmio_bad, row_index_past_m)
{
    expect_failure("row_big", BANNER "3 5 1\n4 1 1\n", SPMV_STATUS_PARSE_ERROR, 3, "row index 4 out of range [1, 3]");
}

Test(mmio_bad, column_index_past_n)
{
    expect_failure("col_big", BANNER "3 5 1\n% c\n1 6 1\n", SPMV_STATUS_PARSE_ERROR, 4,
                   "column index 6 out of range [1, 5]");
}

Test(mmio_bad, index_past_int64)
{
    expect_failure("row_huge", BANNER "3 3 1\n99999999999999999999 1 1\n", SPMV_STATUS_PARSE_ERROR, 3,
                   "out of range");
}

Test(mmio_bad, index_negative)
{
    expect_failure("row_neg", BANNER "3 3 1\n-1 1 1\n", SPMV_STATUS_PARSE_ERROR, 3, "row index -1 out of range");
}

Test(mmio_bad, index_not_numeric)
{
    expect_failure("row_text", BANNER "3 3 1\nx 1 1\n", SPMV_STATUS_PARSE_ERROR, 3, "row index 'x'");
}

Test(mmio_bad, index_fractional)
{
    expect_failure("col_frac", BANNER "3 3 1\n1 1.0 1\n", SPMV_STATUS_PARSE_ERROR, 3, "column index '1.0'");
}

Test(mmio_bad, value_not_numeric)
{
    expect_failure("val_text", BANNER "3 3 2\n1 1 1\n2 2 abc\n", SPMV_STATUS_PARSE_ERROR, 4, "value 'abc'");
}

Test(mmio_bad, value_with_junk_attached)
{
    expect_failure("val_junk", BANNER "3 3 1\n2 2 1.5e3x\n", SPMV_STATUS_PARSE_ERROR, 3, "value '1.5e3x'");
}

Test(mmio_bad, value_missing)
{
    expect_failure("val_missing", BANNER "3 3 2\n1 1 1\n2 2\n", SPMV_STATUS_PARSE_ERROR, 4, "missing value");
}

Test(mmio_bad, column_missing)
{
    expect_failure("col_missing", BANNER "3 3 1\n2\n", SPMV_STATUS_PARSE_ERROR, 3, "missing column");
}

Test(mmio_bad, trailing_garbage)
{
    expect_failure("trailing", BANNER "3 3 2\n1 1 1 junk\n2 2 1\n", SPMV_STATUS_PARSE_ERROR, 3, "'junk'");
}

Test(mmio_bad, pattern_with_value)
{
    expect_failure("pattern_val", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 2.5\n",
                   SPMV_STATUS_PARSE_ERROR, 3, "'2.5'");
}

Test(mmio_bad, integer_field_fractional_value)
{
    expect_failure("int_frac", "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 1 4\n2 2 1.5\n",
                   SPMV_STATUS_PARSE_ERROR, 4, "'1.5' is not an integer");
}

Test(mmio_bad, skew_symmetric_diagonal)
{
    expect_failure("skew_diag", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 4\n3 3 1\n",
                   SPMV_STATUS_PARSE_ERROR, 4, "diagonal entry (3, 3)");
}

Test(mmio_bad, truncated_too_few_entries)
{
    expect_failure("truncated", BANNER "3 3 4\n1 1 1\n2 2 1\n% trailing comment\n", SPMV_STATUS_PARSE_ERROR, 5,
                   "expected 4 entries, found 2");
}

Test(mmio_bad, too_many_entries)
{
    expect_failure("too_many", BANNER "3 3 2\n1 1 1\n2 2 1\n\n% c\n3 3 1\n", SPMV_STATUS_PARSE_ERROR, 7,
                   "more entries than the 2 announced on line 2");
}

Test(mmio_bad, entries_for_empty_size)
{
    expect_failure("zero_size_entry", BANNER "0 0 1\n1 1 1\n", SPMV_STATUS_PARSE_ERROR, 3, "out of range [1, 0]");
}

/* ==================================================================================================== */
/* === gzip =========================================================================================== */
/* ==================================================================================================== */

/* A gzip file of a small valid matrix, returned in memory (malloc) for the corruption tests. */
static unsigned char *small_gzip(const char *tag, size_t *len)
{
    char path[PATH_LEN];
    scratch_path(path, tag, ".src.mtx.gz");
    /* enough text that the deflate stream is more than a few bytes */
    char text[8192] = BANNER "60 60 60\n";
    for (int i = 1; i <= 60; i++) {
        char line[64];
        snprintf(line, sizeof line, "%d %d %d.25\n", i, 61 - i, i * 7);
        strcat(text, line);
    }
    write_gzip(path, text);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    unsigned char *data = malloc(1 << 16);
    cr_assert_not_null(data);
    *len = fread(data, 1, 1 << 16, f);
    fclose(f);
    remove(path);
    cr_assert_gt(*len, 40);
    return data;
}

static void expect_gzip_failure(const char *tag, const unsigned char *data, size_t len)
{
    char path[PATH_LEN];
    scratch_path(path, tag, ".mtx.gz");
    write_bytes(path, data, len);
    spmv_matrix_t *A = NULL;
    spmv_status_t st = spmv_matrix_read_mtx(&A, path, SPMV_F64);
    cr_expect_eq(st, SPMV_STATUS_IO_ERROR, "%s: %s", spmv_status_string(st), spmv_last_error(NULL));
    cr_expect_null(A);
    cr_expect(strncmp(spmv_last_error(NULL), path, strlen(path)) == 0, "%s", spmv_last_error(NULL));
    cr_expect(strstr(spmv_last_error(NULL), "gzip") != NULL, "%s", spmv_last_error(NULL));
    spmv_matrix_destroy(A);
    remove(path);
}

Test(mmio_bad, gzip_corrupt)
{
    size_t len;
    unsigned char *data = small_gzip("gz_corrupt", &len);
    for (size_t k = 12; k < len - 8; k += 3) data[k] ^= 0x5a; /* scramble the deflate stream, keep the header */
    expect_gzip_failure("gz_corrupt", data, len);
    free(data);
}

Test(mmio_bad, gzip_bad_checksum)
{
    size_t len;
    unsigned char *data = small_gzip("gz_crc", &len);
    data[len - 8] ^= 0xff; /* the CRC-32 of the trailer */
    expect_gzip_failure("gz_crc", data, len);
    free(data);
}

Test(mmio_bad, gzip_truncated)
{
    size_t len;
    unsigned char *data = small_gzip("gz_trunc", &len);
    expect_gzip_failure("gz_trunc", data, len / 2);
    free(data);
}

Test(mmio_ok, gzip_written_with_zlib)
{
    char path[PATH_LEN];
    scratch_path(path, "gz_ok", ".mtx.gz");
    write_gzip(path, "%%MatrixMarket matrix coordinate real general\n% gz\n2 3 3\n1 3 -2.5\n2 1 4\n1 1 1e-3\n");
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_read_mtx(&A, path, SPMV_F64), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    const entry want[] = {{0, 0, 1e-3}, {0, 2, -2.5}, {1, 0, 4}};
    expect_matrix(A, 2, 3, want, 3);
    spmv_matrix_destroy(A);
    remove(path);
}

/* ==================================================================================================== */
/* === Accepted variants ============================================================================== */
/* ==================================================================================================== */

static const entry small_want[] = {{0, 0, 1.5}, {1, 2, -2}, {2, 1, 3e10}};

Test(mmio_ok, comments_and_blank_lines)
{
    expect_read("comments", BANNER "% first\n%\n\n   \n% x 1 2\n3 3 3\n\n1 1 1.5\n% between entries\n2 3 -2\n\n"
                            "3 2 3e10\n% trailing\n\n",
                3, 3, small_want, 3);
}

Test(mmio_ok, crlf_line_endings)
{
    expect_read("crlf", "%%MatrixMarket matrix coordinate real general\r\n% c\r\n\r\n3 3 3\r\n1 1 1.5\r\n"
                        "2 3 -2\r\n3 2 3e10\r\n",
                3, 3, small_want, 3);
}

Test(mmio_ok, tabs_and_surrounding_blanks)
{
    expect_read("tabs", "%%MatrixMarket\tmatrix  coordinate\treal general  \n  3\t3 3 \n\t1 1\t1.5\n"
                        "  2   3 -2   \n3\t2\t3e10\t\n",
                3, 3, small_want, 3);
}

Test(mmio_ok, banner_case_insensitive)
{
    expect_read("case", "%%matrixmarket MATRIX Coordinate REAL General\n3 3 3\n1 1 1.5\n2 3 -2\n3 2 3e10\n", 3, 3,
                small_want, 3);
}

Test(mmio_ok, no_final_newline)
{
    expect_read("no_eol", BANNER "3 3 3\n1 1 1.5\n2 3 -2\n3 2 3e10", 3, 3, small_want, 3);
}

Test(mmio_ok, unsorted_entries)
{
    expect_read("unsorted", BANNER "3 3 3\n3 2 3e10\n2 3 -2\n1 1 1.5\n", 3, 3, small_want, 3);
}

Test(mmio_ok, pattern_values_are_one)
{
    const entry want[] = {{0, 1, 1}, {1, 0, 1}, {1, 3, 1}};
    expect_read("pattern", "%%MatrixMarket matrix coordinate pattern general\n2 4 3\n2 4\n1 2\n2 1\n", 2, 4, want, 3);
}

Test(mmio_ok, integer_field)
{
    const entry want[] = {{0, 0, 7}, {0, 1, -12}, {1, 1, 9007199254740993.0}};
    expect_read("integer", "%%MatrixMarket matrix coordinate integer general\n2 2 3\n1 1 7\n1 2 -12\n"
                           "2 2 +9007199254740993\n",
                2, 2, want, 3);
}

Test(mmio_ok, real_number_forms)
{
    const entry want[] = {{0, 0, 0.5}, {0, 1, -1e-300}, {0, 2, 8}, {0, 3, 1.0000000000000002}};
    expect_read("reals", BANNER "1 4 4\n1 1 .5\n1 2 -1E-300\n1 3 0x1p3\n1 4 1.0000000000000002\n", 1, 4, want, 4);
}

Test(mmio_ok, symmetric_expansion)
{
    /* lower triangle of [[4 1 0],[1 5 2],[0 2 6]] */
    const entry want[] = {{0, 0, 4}, {0, 1, 1}, {1, 0, 1}, {1, 1, 5}, {1, 2, 2}, {2, 1, 2}, {2, 2, 6}};
    expect_read("symmetric", "%%MatrixMarket matrix coordinate real symmetric\n3 3 5\n1 1 4\n2 1 1\n2 2 5\n"
                             "3 2 2\n3 3 6\n",
                3, 3, want, 7);
}

Test(mmio_ok, symmetric_pattern_expansion)
{
    const entry want[] = {{0, 2, 1}, {1, 1, 1}, {2, 0, 1}};
    expect_read("sym_pattern", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n3 1\n2 2\n", 3, 3, want,
                3);
}

Test(mmio_ok, skew_symmetric_expansion)
{
    const entry want[] = {{0, 1, -3}, {0, 2, 0.5}, {1, 0, 3}, {2, 0, -0.5}};
    expect_read("skew", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 3\n3 1 -0.5\n", 3, 3,
                want, 4);
}

Test(mmio_ok, duplicates_summed)
{
    const entry want[] = {{0, 0, 3.5}, {1, 1, 2}};
    expect_read("dups", BANNER "2 2 4\n1 1 1\n2 2 2\n1 1 2\n1 1 0.5\n", 2, 2, want, 2);
}

Test(mmio_ok, empty_matrix)
{
    expect_read("empty_matrix", BANNER "0 0 0\n", 0, 0, NULL, 0);
}

Test(mmio_ok, no_entries_nonzero_size)
{
    expect_read("no_entries", BANNER "% nothing stored\n5 7 0\n", 5, 7, NULL, 0);
}

/* A comment longer than the reader's first buffer (256 KiB) makes it grow, not truncate. */
Test(mmio_ok, long_comment_line)
{
    size_t body = 700000, head = strlen(BANNER);
    const char *tail = "3 3 3\n1 1 1.5\n2 3 -2\n3 2 3e10\n";
    char *text = malloc(head + body + strlen(tail) + 2);
    cr_assert_not_null(text);
    memcpy(text, BANNER, head);
    text[head] = '%';
    memset(text + head + 1, 'c', body - 1);
    text[head + body] = '\n';
    strcpy(text + head + body + 1, tail);
    expect_read("long_comment", text, 3, 3, small_want, 3);
    free(text);
}

/* ==================================================================================================== */
/* === Writer ========================================================================================= */
/* ==================================================================================================== */

static char *slurp_gz(const char *path)
{
    gzFile gz = gzopen(path, "rb");
    cr_assert_not_null(gz);
    char *text = calloc(1, 1 << 16);
    cr_assert_not_null(text);
    cr_assert_geq(gzread(gz, text, (1 << 16) - 1), 0);
    gzclose(gz);
    return text;
}

static spmv_matrix_t *small_matrix(void)
{
    const int32_t rp[] = {0, 2, 2, 3};
    const int32_t ci[] = {0, 3, 1};
    const double v[] = {0.1, -2.0, 1e300};
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, 3, 4, 3, rp, ci, v, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS, "%s",
                 spmv_last_error(NULL));
    return A;
}

static const char small_text[] = "%%MatrixMarket matrix coordinate real general\n% written by libspmvport\n3 4 3\n"
                                 "1 1 0.10000000000000001\n1 4 -2\n3 2 1.0000000000000001e+300\n";

Test(mmio_write, plain_text)
{
    char path[PATH_LEN];
    scratch_path(path, "write_plain", ".mtx");
    spmv_matrix_t *A = small_matrix();
    cr_assert_eq(spmv_matrix_write_mtx(A, path), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    char text[4096] = "";
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    cr_expect_str_eq(text, small_text);
    spmv_matrix_destroy(A);
    remove(path);
}

Test(mmio_write, gzip_when_path_ends_in_gz)
{
    char path[PATH_LEN];
    scratch_path(path, "write_gz", ".mtx.gz");
    spmv_matrix_t *A = small_matrix();
    cr_assert_eq(spmv_matrix_write_mtx(A, path), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    unsigned char magic[2] = {0, 0};
    cr_assert_eq(fread(magic, 1, 2, f), 2);
    fclose(f);
    cr_expect(magic[0] == 0x1f && magic[1] == 0x8b, "not a gzip file");
    char *text = slurp_gz(path);
    cr_expect_str_eq(text, small_text);
    free(text);
    spmv_matrix_destroy(A);
    remove(path);
}

Test(mmio_write, unwritable_path)
{
    char path[PATH_LEN];
    scratch_path(path, "no_such_dir", "/m.mtx");
    spmv_matrix_t *A = small_matrix();
    cr_assert_eq(spmv_matrix_write_mtx(A, path), SPMV_STATUS_IO_ERROR);
    cr_expect(strstr(spmv_last_error(NULL), path) != NULL, "%s", spmv_last_error(NULL));
    cr_expect(strstr(spmv_last_error(NULL), strerror(ENOENT)) != NULL, "%s", spmv_last_error(NULL));
    spmv_matrix_destroy(A);
}

/* A device that accepts the open and refuses every write (Linux): the error must surface, not be lost. */
Test(mmio_write, disk_full)
{
    if (access("/dev/full", W_OK) != 0) cr_skip_test("no writable /dev/full on this system");
    spmv_matrix_t *A = small_matrix();
    cr_assert_eq(spmv_matrix_write_mtx(A, "/dev/full"), SPMV_STATUS_IO_ERROR);
    cr_expect(strstr(spmv_last_error(NULL), "/dev/full: write error") != NULL, "%s", spmv_last_error(NULL));
    spmv_matrix_destroy(A);
}

Test(mmio_write, empty_matrix_round_trip)
{
    char path[PATH_LEN];
    scratch_path(path, "write_empty", ".mtx");
    const int32_t rp[] = {0, 0, 0};
    spmv_matrix_t *A = NULL, *B = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, 2, 5, 0, rp, NULL, NULL, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS, "%s",
                 spmv_last_error(NULL));
    cr_assert_eq(spmv_matrix_write_mtx(A, path), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    cr_assert_eq(spmv_matrix_read_mtx(&B, path, SPMV_F64), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    expect_matrix(B, 2, 5, NULL, 0);
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(B);
    remove(path);
}

/* ==================================================================================================== */
/* === Shared matrices: sizes and read -> write -> read ============================================== */
/* ==================================================================================================== */

typedef struct manifest_row {
    char name[256], symmetry[64];
    long rows, cols, nnz_stored;
} manifest_row;

/* Parse "name rows cols nnz_stored symmetry ..." (tab-separated); 0 on the header or a short line. */
static int parse_manifest_line(char *line, manifest_row *row)
{
    char *fields[5];
    char *save = line;
    for (int k = 0; k < 5; k++) {
        fields[k] = save;
        char *tab = strchr(save, '\t');
        if (tab == NULL) return 0;
        *tab = '\0';
        save = tab + 1;
    }
    if (strcmp(fields[0], "name") == 0) return 0;
    /* a name that does not fit is a failure, not a silently truncated name that matches no file */
    const size_t name_len = strlen(fields[0]), sym_len = strlen(fields[4]);
    cr_assert_lt(name_len, sizeof row->name, "MANIFEST.tsv: name '%.40s...' over %zu characters", fields[0],
                 sizeof row->name - 1);
    cr_assert_lt(sym_len, sizeof row->symmetry, "MANIFEST.tsv: %s: symmetry '%.40s' too long", fields[0], fields[4]);
    memcpy(row->name, fields[0], name_len + 1);
    memcpy(row->symmetry, fields[4], sym_len + 1);
    row->rows = strtol(fields[1], NULL, 10);
    row->cols = strtol(fields[2], NULL, 10);
    row->nnz_stored = strtol(fields[3], NULL, 10);
    return 1;
}

/* A read symmetric matrix must equal its transpose; skew-symmetric its negated transpose. */
static int is_symmetric(int32_t m, const int32_t *rp, const int32_t *ci, const double *v, double sign)
{
    for (int32_t i = 0; i < m; i++)
        for (int32_t p = rp[i]; p < rp[i + 1]; p++) {
            int32_t j = ci[p], lo = rp[j], hi = rp[j + 1];
            while (lo < hi) { /* binary search for column i in row j */
                int32_t mid = lo + (hi - lo) / 2;
                if (ci[mid] < i) lo = mid + 1;
                else hi = mid;
            }
            if (lo == rp[j + 1] || ci[lo] != i || v[lo] != sign * v[p]) return 0;
        }
    return 1;
}

static void expect_same_matrix(const char *name, const spmv_matrix_t *A, const spmv_matrix_t *B)
{
    int32_t m, n, nnz, m2, n2, nnz2;
    const int32_t *rp, *ci, *rp2, *ci2;
    const void *v, *v2;
    spmv_matrix_get_size(A, &m, &n, &nnz, NULL);
    spmv_matrix_get_size(B, &m2, &n2, &nnz2, NULL);
    spmv_matrix_get_csr(A, &rp, &ci, &v);
    spmv_matrix_get_csr(B, &rp2, &ci2, &v2);
    cr_assert(m == m2 && n == n2 && nnz == nnz2, "%s: sizes %dx%d/%d vs %dx%d/%d after round trip", name, m, n,
              nnz, m2, n2, nnz2);
    cr_expect(memcmp(rp, rp2, ((size_t)m + 1) * sizeof *rp) == 0, "%s: row pointers differ", name);
    cr_expect(memcmp(ci, ci2, (size_t)nnz * sizeof *ci) == 0, "%s: column indices differ", name);
    cr_expect(memcmp(v, v2, (size_t)nnz * sizeof(double)) == 0, "%s: values differ (bitwise)", name);
}

/* Read one shared matrix, check it against its MANIFEST row, write it (plain or gzip), read it back. */
static void round_trip(const char *dir, const manifest_row *row, int use_gzip)
{
    char path[PATH_LEN], out[PATH_LEN];
    snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, row->name);
    scratch_path(out, row->name, use_gzip ? ".rt.mtx.gz" : ".rt.mtx");
    spmv_matrix_t *A = NULL, *B = NULL;
    spmv_status_t st = spmv_matrix_read_mtx(&A, path, SPMV_F64);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "%s: %s", row->name, spmv_last_error(NULL));
    int32_t m, n, nnz;
    const int32_t *rp, *ci;
    const void *v;
    spmv_matrix_get_size(A, &m, &n, &nnz, NULL);
    spmv_matrix_get_csr(A, &rp, &ci, &v);
    cr_expect(m == row->rows && n == row->cols, "%s: %dx%d, MANIFEST says %ldx%ld", row->name, m, n, row->rows,
              row->cols);
    if (strcmp(row->symmetry, "general") == 0) {
        cr_expect_eq(nnz, row->nnz_stored, "%s: nnz %d, MANIFEST says %ld", row->name, nnz, row->nnz_stored);
    } else {
        cr_expect(nnz >= row->nnz_stored && nnz <= 2 * row->nnz_stored, "%s: nnz %d for %ld stored", row->name,
                  nnz, row->nnz_stored);
        cr_expect(is_symmetric(m, rp, ci, v, strcmp(row->symmetry, "skew-symmetric") == 0 ? -1.0 : 1.0),
                  "%s: the expanded matrix is not %s", row->name, row->symmetry);
    }
    cr_assert_eq(spmv_matrix_write_mtx(A, out), SPMV_STATUS_SUCCESS, "%s: %s", row->name, spmv_last_error(NULL));
    st = spmv_matrix_read_mtx(&B, out, SPMV_F64);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "%s (written): %s", row->name, spmv_last_error(NULL));
    expect_same_matrix(row->name, A, B);
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(B);
    remove(out);
}

Test(mmio_shared, round_trip_every_manifest_matrix, .timeout = 600)
{
    const char *dir = getenv("SPMVPORT_MATRIX_DIR");
    if (dir == NULL || dir[0] == '\0') dir = SPMVPORT_SHARED_MATRICES;
    char path[PATH_LEN];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s: %s (set SPMVPORT_MATRIX_DIR)", path, strerror(errno));
    char line[4096];
    int count = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        manifest_row row;
        if (!parse_manifest_line(line, &row)) continue;
        round_trip(dir, &row, count % 2); /* every other one through the gzip writer */
        count++;
    }
    fclose(f);
    cr_expect_gt(count, 0, "no matrices listed in %s", path);
    cr_log_info("round-tripped %d matrices from %s", count, dir);
}
