/*
 * lb_split_check.h -- the invariants of csr_lb's split (spmvport_lb_add_arrays), checked by the csr_lb and tile
 * tests: a start bit exactly at the first entry of every non-empty row, the compact-row map and the empty-row
 * list partition the rows in order, and each chunk's row is the compact row holding the entry before it.
 */
#ifndef SPMVPORT_TEST_LB_SPLIT_CHECK_H
#define SPMVPORT_TEST_LB_SPLIT_CHECK_H

#include "internal.h"
#include "support.h"

static inline void check_lb_split(const spmvport_array *a, const int32_t *ptr, int32_t m, int64_t nnz,
                                  int64_t chunk, int64_t nwarps, int64_t nempty, const char *what)
{
    const uint8_t *bits = a[SPMVPORT_LB_START_BITS].data;
    const int32_t *chunk_row = a[SPMVPORT_LB_CHUNK_ROW].data, *row_map = a[SPMVPORT_LB_ROW_MAP].data;
    const int32_t *empty = a[SPMVPORT_LB_EMPTY_ROWS].data;
    cr_assert(chunk > 0 && chunk % 8 == 0 && nwarps == (nnz > 0 ? (nnz + chunk - 1) / chunk : 1),
              "%s: %lld chunks of %lld for %lld entries", what, (long long)nwarps, (long long)chunk, (long long)nnz);
    cr_assert(a[SPMVPORT_LB_START_BITS].bytes >= (size_t)(nnz + 7) / 8, "%s: start bits too short", what);
    cr_assert(a[SPMVPORT_LB_ROW_MAP].bytes == (nempty > 0 ? (size_t)(m - nempty) * sizeof(int32_t) : 0),
              "%s: row map size", what);
    cr_assert(a[SPMVPORT_LB_EMPTY_ROWS].bytes == (size_t)nempty * sizeof(int32_t), "%s: empty list size", what);
    int64_t compact = 0, ne = 0, set = 0;
    for (int32_t r = 0; r < m; r++) {
        if (ptr[r + 1] == ptr[r]) {
            cr_assert(ne < nempty && empty[ne] == r, "%s: empty row %d not listed in order", what, r);
            ne++;
            continue;
        }
        cr_assert(nempty == 0 || row_map[compact] == r, "%s: compact row %lld maps to %d, not %d", what,
                  (long long)compact, nempty ? row_map[compact] : -1, r);
        for (int64_t w = 1; w < nwarps; w++) /* chunk w opens inside the row holding entry w*chunk - 1 */
            if (w * chunk - 1 >= ptr[r] && w * chunk - 1 < ptr[r + 1])
                cr_assert_eq(chunk_row[w], compact, "%s: chunk %lld row", what, (long long)w);
        compact++;
    }
    cr_assert_eq(ne, nempty, "%s: %lld empty rows listed, %lld found", what, (long long)nempty, (long long)ne);
    cr_assert(nwarps < 1 || chunk_row[0] == -1, "%s: chunk 0 opens inside no row", what);
    for (int64_t e = 0; e < nnz; e++) set += bits[e >> 3] >> (e & 7) & 1;
    cr_assert_eq(set, compact, "%s: %lld start bits for %lld non-empty rows", what, (long long)set,
                 (long long)compact);
    for (int32_t r = 0; r < m; r++)
        if (ptr[r + 1] > ptr[r])
            cr_assert(bits[ptr[r] >> 3] >> (ptr[r] & 7) & 1, "%s: row %d's first entry has no start bit", what, r);
}

#endif
