/*
 * cpu_ref.h -- CPU executors: one per format, each walking the format's arrays the way its GPU kernel does, so
 * that a test against the oracle proves the builder (and the traversal the kernel will use) right.
 */
#ifndef SPMVPORT_CPU_REF_H
#define SPMVPORT_CPU_REF_H

#include "../common/internal.h"

typedef void (*spmvport_cpu_executor)(const spmvport_format_data *fd, double alpha, const void *x, double beta,
                                      void *y);

/* csr_executors.c */
void spmvport_cpu_csr_scalar(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y);
void spmvport_cpu_csr_vector(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y);
void spmvport_cpu_csr_lb(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y);

/* the research formats, one file each (tile_executor.c, hbp_executor.c, amf_csr_executor.c, teb_executor.c,
 * ehyb_executor.c) */
void spmvport_cpu_tile(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y);
void spmvport_cpu_hbp(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y);
void spmvport_cpu_amf_csr(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y);
void spmvport_cpu_teb(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y);
void spmvport_cpu_ehyb(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y);

#endif
