/* heat.c: a 5-point heat-equation stencil through the C ABI, checked against a plain C loop that
 * computes the same thing in the same order. Exits nonzero on any mismatch.
 *
 * The grid is N x N, its top edge held at 100 and a hot spot written in by vm_write. Each explicit
 * time step (diffusion number 1/8) replaces every interior point by
 *     new = 0.5 * centre + 0.125 * (north + south + west + east),
 * computed as 0.5 * (centre + 0.25 * (((north + south) + west) + east)) into a temporary base and
 * written back into the interior (examples/heat.vm is the same program in text form). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define N 34
#define INNER (N - 2)
#define STEPS 25

/* The interior of the grid shifted by (di, dj): rows 1+di .. N-2+di, columns 1+dj .. N-2+dj. */
static vm_operand shifted(vm_base grid, int di, int dj) {
    return vm_operand_view(vm_view_2d(grid, (int64_t)(1 + di) * N + (1 + dj), INNER, INNER, N, 1));
}

static void reference(double *g, int steps) {
    static double next[INNER * INNER];
    int s, i, j;
    for (s = 0; s < steps; s++) {
        for (i = 1; i < N - 1; i++) {
            for (j = 1; j < N - 1; j++) {
                double acc = g[(i - 1) * N + j] + g[(i + 1) * N + j];
                acc = acc + g[i * N + j - 1];
                acc = acc + g[i * N + j + 1];
                acc = acc * 0.25;
                acc = acc + g[i * N + j];
                next[(i - 1) * INNER + (j - 1)] = acc * 0.5;
            }
        }
        for (i = 1; i < N - 1; i++) {
            memcpy(&g[i * N + 1], &next[(i - 1) * INNER], INNER * sizeof(double));
        }
    }
}

int main(void) {
    static double initial[N * N], expect[N * N];
    vm_context *ctx = NULL;
    vm_base grid, next, total;
    const double *got;
    size_t nbytes = 0;
    double sum = 0.0, max_diff = 0.0, vm_total;
    int i, s;

    for (i = 0; i < N; i++) {
        initial[i] = 100.0;
    }
    initial[(N / 2) * N + N / 3] = 500.0;
    memcpy(expect, initial, sizeof initial);
    reference(expect, STEPS);

    CHECK(vm_init(NULL, &ctx));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, N * N, &grid));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, INNER * INNER, &next));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 1, &total));
    CHECK(vm_write(ctx, grid, 0, initial, sizeof initial));

    for (s = 0; s < STEPS; s++) {
        vm_operand t = vm_operand_view(vm_view_2d(next, 0, INNER, INNER, INNER, 1));
        vm_instruction step[6];
        step[0] = vm_instr3(VM_OP_ADD, t, shifted(grid, -1, 0), shifted(grid, 1, 0));
        step[1] = vm_instr3(VM_OP_ADD, t, t, shifted(grid, 0, -1));
        step[2] = vm_instr3(VM_OP_ADD, t, t, shifted(grid, 0, 1));
        step[3] = vm_instr3(VM_OP_MULTIPLY, t, t, vm_operand_f64(0.25));
        step[4] = vm_instr3(VM_OP_ADD, t, t, shifted(grid, 0, 0));
        step[5] = vm_instr3(VM_OP_MULTIPLY, shifted(grid, 0, 0), t, vm_operand_f64(0.5));
        CHECK(vm_submit(ctx, step, 6));
    }
    {
        /* The total heat, as a reduction of the whole grid (a 1-d view of all N*N elements). */
        vm_instruction sum_all = vm_instr3(VM_OP_ADD_REDUCE, vm_operand_view(vm_view_scalar(total, 0)),
                                           vm_operand_range(grid, 0, N * N), vm_operand_i64(0));
        CHECK(vm_submit(ctx, &sum_all, 1));
    }

    got = (const double *)synced_data(ctx, grid, &nbytes);
    REQUIRE(nbytes == sizeof expect);
    for (i = 0; i < N * N; i++) {
        double d = fabs(got[i] - expect[i]);
        if (d > max_diff) {
            max_diff = d;
        }
        sum += got[i];
    }
    vm_total = *(const double *)synced_data(ctx, total, &nbytes);
    REQUIRE(nbytes == sizeof(double));

    printf("heat: %dx%d grid, %d steps\n", N, N, STEPS);
    printf("centre %.17g, hot spot %.17g\n", got[(N / 2) * N + N / 2], got[(N / 2) * N + N / 3]);
    /* Float reductions may associate differently on other engines: print fewer digits. */
    printf("checksum %.17g, vm total %.9g\n", sum, vm_total);
    printf("max |vm - c loop| = %g\n", max_diff);
    if (max_diff != 0.0) {
        fprintf(stderr, "heat: the VM and the C loop disagree (max difference %g)\n", max_diff);
        return 1;
    }
    if (fabs(vm_total - sum) > 1e-9 * fabs(sum)) {
        fprintf(stderr, "heat: the reduction %.17g differs from the C sum %.17g\n", vm_total, sum);
        return 1;
    }
    CHECK(vm_base_free(ctx, next));
    CHECK(vm_base_free(ctx, total));
    CHECK(vm_base_free(ctx, grid));
    CHECK(vm_shutdown(ctx));
    return 0;
}
