/* basics.c: bases, element-wise arithmetic, broadcasting, reductions (to values and to
 * positions), scans, comparisons and select, casts, range, random, gather/scatter, host writes,
 * sync and data, several contexts, and the matmul extension when the stack implements it. Prints
 * what it computes (exactly where every engine must agree bit for bit) and exits nonzero on any
 * wrong value. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static vm_operand whole(vm_base b, uint64_t n) {
    return vm_operand_range(b, 0, n);
}

static void arithmetic(vm_context *ctx) {
    vm_base a;
    const double *x;
    size_t nbytes;
    int i;
    vm_instruction prog[3];
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 10, &a));
    prog[0] = vm_instr1(VM_OP_RANGE, whole(a, 10));                                   /* 0..9 */
    prog[1] = vm_instr3(VM_OP_MULTIPLY, whole(a, 10), whole(a, 10), vm_operand_f64(2.0)); /* *2 */
    prog[2] = vm_instr3(VM_OP_ADD, whole(a, 10), whole(a, 10), vm_operand_f64(1.0));      /* +1 */
    CHECK(vm_submit(ctx, prog, 3));
    x = (const double *)synced_data(ctx, a, &nbytes);
    REQUIRE(nbytes == 10 * sizeof(double));
    printf("odd:");
    for (i = 0; i < 10; i++) {
        REQUIRE(x[i] == 2.0 * i + 1.0);
        printf(" %g", x[i]);
    }
    printf("\n");
    CHECK(vm_base_free(ctx, a));
}

static void reductions(vm_context *ctx) {
    /* m is 3 x 4 = range(12) as i32; sum along each axis, and everything. */
    vm_base m, rows, cols, all, scan;
    const int32_t *r, *c, *s, *sc;
    size_t nbytes;
    int i;
    vm_operand mv;
    vm_instruction prog[6];
    CHECK(vm_base_new(ctx, VM_DTYPE_I32, 12, &m));
    CHECK(vm_base_new(ctx, VM_DTYPE_I32, 3, &rows));
    CHECK(vm_base_new(ctx, VM_DTYPE_I32, 4, &cols));
    CHECK(vm_base_new(ctx, VM_DTYPE_I32, 1, &all));
    CHECK(vm_base_new(ctx, VM_DTYPE_I32, 12, &scan));
    mv = vm_operand_view(vm_view_2d(m, 0, 3, 4, 4, 1));
    prog[0] = vm_instr1(VM_OP_RANGE, mv);
    prog[1] = vm_instr3(VM_OP_ADD_REDUCE, whole(rows, 3), mv, vm_operand_i64(1));
    prog[2] = vm_instr3(VM_OP_ADD_REDUCE, whole(cols, 4), mv, vm_operand_i64(0));
    prog[3] = vm_instr3(VM_OP_ADD_REDUCE, vm_operand_view(vm_view_scalar(all, 0)), whole(m, 12), vm_operand_i64(0));
    prog[4] = vm_instr3(VM_OP_ADD_ACCUMULATE, vm_operand_view(vm_view_2d(scan, 0, 3, 4, 4, 1)), mv,
                        vm_operand_i64(1));
    prog[5] = vm_instr1(VM_OP_NONE, whole(m, 12));
    prog[5].noperands = 0;
    CHECK(vm_submit(ctx, prog, 6));
    r = (const int32_t *)synced_data(ctx, rows, &nbytes);
    REQUIRE(nbytes == 3 * sizeof(int32_t));
    REQUIRE(r[0] == 6 && r[1] == 22 && r[2] == 38);
    c = (const int32_t *)synced_data(ctx, cols, &nbytes);
    REQUIRE(c[0] == 12 && c[1] == 15 && c[2] == 18 && c[3] == 21);
    s = (const int32_t *)synced_data(ctx, all, &nbytes);
    REQUIRE(s[0] == 66);
    sc = (const int32_t *)synced_data(ctx, scan, &nbytes);
    REQUIRE(sc[3] == 6 && sc[7] == 22 && sc[11] == 38 && sc[4] == 4);
    printf("row sums %d %d %d, column sums %d %d %d %d, total %d, scan", r[0], r[1], r[2], c[0], c[1], c[2], c[3],
           s[0]);
    for (i = 0; i < 12; i++) {
        printf(" %d", sc[i]);
    }
    printf("\n");
    CHECK(vm_base_free(ctx, m));
    CHECK(vm_base_free(ctx, rows));
    CHECK(vm_base_free(ctx, cols));
    CHECK(vm_base_free(ctx, all));
    CHECK(vm_base_free(ctx, scan));
}

static void positions(vm_context *ctx) {
    /* NumPy's argmax and argmin: the first of equal values, the first NaN, -0.0 equal to 0.0. */
    vm_base m, rows, cols, first;
    const int64_t *r, *c, *f;
    size_t nbytes;
    double data[12] = {1.0, 5.0, 5.0, -2.0, NAN, 0.0, NAN, 9.0, -0.0, 0.0, -1.0, -1.0};
    vm_operand mv;
    vm_instruction prog[3];
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 12, &m));
    CHECK(vm_base_new(ctx, VM_DTYPE_I64, 3, &rows));
    CHECK(vm_base_new(ctx, VM_DTYPE_I64, 4, &cols));
    CHECK(vm_base_new(ctx, VM_DTYPE_I64, 1, &first));
    CHECK(vm_write(ctx, m, 0, data, sizeof data));
    mv = vm_operand_view(vm_view_2d(m, 0, 3, 4, 4, 1));
    prog[0] = vm_instr3(VM_OP_ARGMAX_REDUCE, whole(rows, 3), mv, vm_operand_i64(1));
    prog[1] = vm_instr3(VM_OP_ARGMIN_REDUCE, whole(cols, 4), mv, vm_operand_i64(0));
    /* The first row backwards, -2 5 5 1: the first 5 of the reversed view. */
    prog[2] = vm_instr3(VM_OP_ARGMAX_REDUCE, vm_operand_view(vm_view_scalar(first, 0)),
                        vm_operand_view(vm_view_1d(m, 3, 4, -1)), vm_operand_i64(0));
    CHECK(vm_submit(ctx, prog, 3));
    r = (const int64_t *)synced_data(ctx, rows, &nbytes);
    REQUIRE(nbytes == 3 * sizeof(int64_t));
    REQUIRE(r[0] == 1 && r[1] == 0 && r[2] == 0);
    c = (const int64_t *)synced_data(ctx, cols, &nbytes);
    REQUIRE(c[0] == 1 && c[1] == 1 && c[2] == 1 && c[3] == 0);
    f = (const int64_t *)synced_data(ctx, first, &nbytes);
    REQUIRE(f[0] == 1);
    printf("argmax of rows %d %d %d, argmin of columns %d %d %d %d, argmax of a reversed row %d\n", (int)r[0],
           (int)r[1], (int)r[2], (int)c[0], (int)c[1], (int)c[2], (int)c[3], (int)f[0]);
    CHECK(vm_base_free(ctx, m));
    CHECK(vm_base_free(ctx, rows));
    CHECK(vm_base_free(ctx, cols));
    CHECK(vm_base_free(ctx, first));
}

static void broadcast_compare_select(vm_context *ctx) {
    /* out[i][j] = row[j] > col[i] ? row[j] : col[i], broadcasting a row and a column. */
    vm_base row, col, mask, out;
    const double *o;
    const uint8_t *mk;
    size_t nbytes;
    int i, j;
    double rv[4] = {1.0, 2.0, 3.0, 4.0}, cv[3] = {0.5, 2.5, 3.5};
    vm_operand rowb, colb, outv, maskv;
    vm_instruction prog[2];
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 4, &row));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 3, &col));
    CHECK(vm_base_new(ctx, VM_DTYPE_BOOL, 12, &mask));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 12, &out));
    CHECK(vm_write(ctx, row, 0, rv, sizeof rv));
    CHECK(vm_write(ctx, col, 0, cv, sizeof cv));
    rowb = vm_operand_view(vm_view_2d(row, 0, 3, 4, 0, 1)); /* stride 0: the row repeated */
    colb = vm_operand_view(vm_view_2d(col, 0, 3, 4, 1, 0)); /* stride 0: the column repeated */
    outv = vm_operand_view(vm_view_2d(out, 0, 3, 4, 4, 1));
    maskv = vm_operand_view(vm_view_2d(mask, 0, 3, 4, 4, 1));
    prog[0] = vm_instr3(VM_OP_GREATER, maskv, rowb, colb);
    prog[1] = vm_instr4(VM_OP_SELECT, outv, maskv, rowb, colb);
    CHECK(vm_submit(ctx, prog, 2));
    o = (const double *)synced_data(ctx, out, &nbytes);
    mk = (const uint8_t *)synced_data(ctx, mask, &nbytes);
    REQUIRE(nbytes == 12);
    printf("select:");
    for (i = 0; i < 3; i++) {
        for (j = 0; j < 4; j++) {
            double want = rv[j] > cv[i] ? rv[j] : cv[i];
            REQUIRE(o[i * 4 + j] == want);
            REQUIRE(mk[i * 4 + j] == (rv[j] > cv[i]));
            printf(" %g", o[i * 4 + j]);
        }
    }
    printf("\n");
    CHECK(vm_base_free(ctx, row));
    CHECK(vm_base_free(ctx, col));
    CHECK(vm_base_free(ctx, mask));
    CHECK(vm_base_free(ctx, out));
}

static void casts_and_math(vm_context *ctx) {
    /* f = [-2.5, -0.5, 0.5, 2.5, 1e10]; i = (i32) f; s = sqrt(|f|); reversed copy via a negative stride. */
    vm_base f, i32, sq, rev;
    const int32_t *iv;
    const double *sv, *rv;
    size_t nbytes;
    int k;
    double fv[5] = {-2.5, -0.5, 0.5, 2.5, 1e10};
    vm_instruction prog[4];
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 5, &f));
    CHECK(vm_base_new(ctx, VM_DTYPE_I32, 5, &i32));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 5, &sq));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 5, &rev));
    CHECK(vm_write(ctx, f, 0, fv, sizeof fv));
    prog[0] = vm_instr2(VM_OP_IDENTITY, whole(i32, 5), whole(f, 5));
    prog[1] = vm_instr2(VM_OP_ABSOLUTE, whole(sq, 5), whole(f, 5));
    prog[2] = vm_instr2(VM_OP_SQRT, whole(sq, 5), whole(sq, 5));
    prog[3] = vm_instr2(VM_OP_IDENTITY, whole(rev, 5), vm_operand_view(vm_view_1d(f, 4, 5, -1)));
    CHECK(vm_submit(ctx, prog, 4));
    iv = (const int32_t *)synced_data(ctx, i32, &nbytes);
    REQUIRE(iv[0] == -2 && iv[1] == 0 && iv[2] == 0 && iv[3] == 2 && iv[4] == INT32_MAX);
    sv = (const double *)synced_data(ctx, sq, &nbytes);
    rv = (const double *)synced_data(ctx, rev, &nbytes);
    printf("cast:");
    for (k = 0; k < 5; k++) {
        REQUIRE(fabs(sv[k] - sqrt(fabs(fv[k]))) <= 1e-15 * sqrt(fabs(fv[k])));
        REQUIRE(rv[k] == fv[4 - k]);
        printf(" %d", iv[k]);
    }
    /* Correctly rounded sqrt is exact per IEEE 754, so this prints the same everywhere. */
    printf("; sqrt: %.17g %.17g\n", sv[0], sv[4]);
    CHECK(vm_base_free(ctx, f));
    CHECK(vm_base_free(ctx, i32));
    CHECK(vm_base_free(ctx, sq));
    CHECK(vm_base_free(ctx, rev));
}

static void random_gather_scatter(vm_context *ctx) {
    vm_base r, idx, g, dst;
    const double *rv, *gv, *dv;
    size_t nbytes;
    int k;
    int64_t iv[4] = {7, 0, 3, 3};
    vm_instruction prog[4];
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 8, &r));
    CHECK(vm_base_new(ctx, VM_DTYPE_I64, 4, &idx));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 4, &g));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 8, &dst));
    CHECK(vm_write(ctx, idx, 0, iv, sizeof iv));
    prog[0] = vm_instr3(VM_OP_RANDOM, whole(r, 8), vm_operand_u64(42), vm_operand_u64(0));
    prog[1] = vm_instr3(VM_OP_GATHER, whole(g, 4), whole(r, 8), whole(idx, 4));
    prog[2] = vm_instr2(VM_OP_IDENTITY, whole(dst, 8), vm_operand_f64(-1.0));
    prog[3] = vm_instr3(VM_OP_SCATTER, whole(dst, 8), whole(g, 4), whole(idx, 4));
    CHECK(vm_submit(ctx, prog, 4));
    rv = (const double *)synced_data(ctx, r, &nbytes);
    gv = (const double *)synced_data(ctx, g, &nbytes);
    dv = (const double *)synced_data(ctx, dst, &nbytes);
    printf("random:");
    for (k = 0; k < 8; k++) {
        REQUIRE(rv[k] >= 0.0 && rv[k] < 1.0);
        printf(" %.17g", rv[k]);
    }
    printf("\n");
    for (k = 0; k < 4; k++) {
        REQUIRE(gv[k] == rv[iv[k]]);
    }
    REQUIRE(dv[7] == rv[7] && dv[0] == rv[0] && dv[3] == rv[3] && dv[1] == -1.0 && dv[2] == -1.0);
    printf("gather/scatter ok\n");
    CHECK(vm_base_free(ctx, r));
    CHECK(vm_base_free(ctx, idx));
    CHECK(vm_base_free(ctx, g));
    CHECK(vm_base_free(ctx, dst));
}

static void host_writes(vm_context *ctx) {
    /* A partial write keeps the rest; data is readable right after a write without a sync. */
    vm_base b;
    const float *x;
    size_t nbytes;
    float first[6] = {1, 2, 3, 4, 5, 6}, patch[2] = {-7, -8};
    vm_instruction twice;
    CHECK(vm_base_new(ctx, VM_DTYPE_F32, 6, &b));
    CHECK(vm_write(ctx, b, 0, first, sizeof first));
    CHECK(vm_data(ctx, b, (const void **)&x, &nbytes));
    REQUIRE(nbytes == sizeof first && x[5] == 6.0f);
    CHECK(vm_write(ctx, b, 2, patch, sizeof patch));
    twice = vm_instr3(VM_OP_MULTIPLY, whole(b, 6), whole(b, 6), vm_operand_f32(2.0f));
    CHECK(vm_submit(ctx, &twice, 1));
    CHECK(vm_flush(ctx));
    x = (const float *)synced_data(ctx, b, &nbytes);
    REQUIRE(x[0] == 2 && x[1] == 4 && x[2] == -14 && x[3] == -16 && x[4] == 10 && x[5] == 12);
    printf("write: %g %g %g %g %g %g\n", x[0], x[1], x[2], x[3], x[4], x[5]);
    CHECK(vm_base_free(ctx, b));
}

static void matmul(vm_context *ctx) {
    /* c (2 x 2) = a (2 x 3) @ b (3 x 2), if the stack implements matmul. */
    uint32_t op = 0;
    int status = vm_extension(ctx, "matmul", &op);
    vm_base a, b, c;
    const double *cv;
    size_t nbytes;
    double av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {7, 8, 9, 10, 11, 12};
    vm_instruction mm;
    /* Extension methods are optional: a stack may implement matmul or not, so what happens here
       goes to stderr, keeping stdout identical on every stack. */
    if (status == VM_ERR_UNSUPPORTED) {
        fprintf(stderr, "matmul: not implemented by this stack: %s\n", vm_last_error());
        return;
    }
    CHECK(status);
    REQUIRE(op >= VM_OP_EXTENSION_BASE);
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 6, &a));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 6, &b));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 4, &c));
    CHECK(vm_write(ctx, a, 0, av, sizeof av));
    CHECK(vm_write(ctx, b, 0, bv, sizeof bv));
    mm = vm_instr3(op, vm_operand_view(vm_view_2d(c, 0, 2, 2, 2, 1)), vm_operand_view(vm_view_2d(a, 0, 2, 3, 3, 1)),
                   vm_operand_view(vm_view_2d(b, 0, 3, 2, 2, 1)));
    CHECK(vm_submit(ctx, &mm, 1));
    cv = (const double *)synced_data(ctx, c, &nbytes);
    REQUIRE(cv[0] == 58 && cv[1] == 64 && cv[2] == 139 && cv[3] == 154);
    fprintf(stderr, "matmul: %g %g %g %g\n", cv[0], cv[1], cv[2], cv[3]);
    {
        uint32_t again = 0;
        CHECK(vm_extension(ctx, "matmul", &again));
        REQUIRE(again == op);
    }
    CHECK(vm_base_free(ctx, a));
    CHECK(vm_base_free(ctx, b));
    CHECK(vm_base_free(ctx, c));
}

static void two_contexts(void) {
    /* Contexts are independent: each has its own bases. */
    vm_context *one = NULL, *two = NULL;
    vm_base a, b;
    const int64_t *x;
    size_t nbytes;
    vm_instruction fill;
    CHECK(vm_init(NULL, &one));
    CHECK(vm_init(NULL, &two));
    REQUIRE(one != two);
    CHECK(vm_base_new(one, VM_DTYPE_I64, 3, &a));
    CHECK(vm_base_new(two, VM_DTYPE_I64, 3, &b));
    fill = vm_instr2(VM_OP_IDENTITY, whole(a, 3), vm_operand_i64(-5));
    CHECK(vm_submit(one, &fill, 1));
    fill = vm_instr2(VM_OP_IDENTITY, whole(b, 3), vm_operand_i64(9));
    CHECK(vm_submit(two, &fill, 1));
    x = (const int64_t *)synced_data(one, a, &nbytes);
    REQUIRE(x[0] == -5 && x[2] == -5);
    x = (const int64_t *)synced_data(two, b, &nbytes);
    REQUIRE(x[0] == 9 && x[2] == 9);
    CHECK(vm_shutdown(one));
    CHECK(vm_shutdown(two));
    printf("two contexts ok\n");
}

int main(void) {
    vm_context *ctx = NULL;
    REQUIRE(vm_abi_version() == VM_ABI_VERSION);
    CHECK(vm_init(NULL, &ctx));
    REQUIRE(ctx != NULL);
    REQUIRE(strcmp(vm_last_error(), "") == 0);
    arithmetic(ctx);
    reductions(ctx);
    positions(ctx);
    broadcast_compare_select(ctx);
    casts_and_math(ctx);
    random_gather_scatter(ctx);
    host_writes(ctx);
    matmul(ctx);
    CHECK(vm_shutdown(ctx));
    two_contexts();
    printf("basics ok\n");
    return 0;
}
