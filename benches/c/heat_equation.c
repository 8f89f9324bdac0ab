/*
 * heat_equation against libvm.so: the C users' path of vm-bench (see benches/README.md).
 *
 * The same algorithm as benches/src/benchmarks/heat_equation/vm.rs, written as a C program
 * writes bytecode: views of bases, one instruction at a time, temporaries created and freed
 * every iteration (so that an engine may keep them in registers), one SYNC per repetition.
 *
 *   heat_equation SIZE DTYPE WARMUP REPS [CONFIG|-] [STACK|-]
 *
 * SIZE is h*w*iterations, DTYPE f64 or f32; CONFIG and STACK choose the stack as vm_init_stack
 * does ("-": the lookup order, $VM_STACK). Prints one line per timed repetition:
 *
 *   RESULT <seconds> <checksum>
 *
 * and exits nonzero, with the VM's message on stderr, when a call fails.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vm.h"

static vm_context *ctx;
static uint32_t dtype;

static void check(int status, const char *what) {
    if (status != VM_OK) {
        fprintf(stderr, "heat_equation.c: %s failed: %s: %s\n", what, vm_status_name(status), vm_last_error());
        exit(2);
    }
}

static vm_operand constant(double x) {
    return dtype == VM_DTYPE_F64 ? vm_operand_f64(x) : vm_operand_f32((float)x);
}

static vm_base base_new(uint64_t n) {
    vm_base b;
    check(vm_base_new(ctx, dtype, n, &b), "vm_base_new");
    return b;
}

static void submit(vm_instruction i) {
    check(vm_submit(ctx, &i, 1), "vm_submit");
}

static vm_operand v2(vm_base b, int64_t start, uint64_t rows, uint64_t cols, int64_t row_stride) {
    return vm_operand_view(vm_view_2d(b, start, rows, cols, row_stride, 1));
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double read_scalar(vm_base b) {
    const void *data;
    size_t nbytes;
    check(vm_sync(ctx, b), "vm_sync");
    check(vm_data(ctx, b, &data, &nbytes), "vm_data");
    return dtype == VM_DTYPE_F64 ? *(const double *)data : (double)*(const float *)data;
}

/* One repetition: set the grid up (untimed), then time the iterations and the read-back. */
static double repetition(uint64_t h, uint64_t w, uint64_t iterations, double *checksum) {
    int64_t W = (int64_t)w + 2;
    uint64_t H = h + 2;
    vm_base grid = base_new(H * (uint64_t)W);
    submit(vm_instr2(VM_OP_IDENTITY, vm_operand_range(grid, 0, H * (uint64_t)W), constant(0.0)));
    submit(vm_instr2(VM_OP_IDENTITY, v2(grid, 0, H, 1, W), constant(-273.15)));
    submit(vm_instr2(VM_OP_IDENTITY, v2(grid, W - 1, H, 1, W), constant(-273.15)));
    submit(vm_instr2(VM_OP_IDENTITY, v2(grid, (int64_t)(H - 1) * W, 1, (uint64_t)W, W), constant(-273.15)));
    submit(vm_instr2(VM_OP_IDENTITY, v2(grid, 0, 1, (uint64_t)W, W), constant(40.0)));
    check(vm_flush(ctx), "vm_flush");

    vm_operand center = v2(grid, W + 1, h, w, W);
    vm_operand north = v2(grid, 1, h, w, W);
    vm_operand south = v2(grid, 2 * W + 1, h, w, W);
    vm_operand east = v2(grid, W + 2, h, w, W);
    vm_operand west = v2(grid, W, h, w, W);
    vm_base delta = 0;

    double t0 = now();
    for (uint64_t it = 0; it < iterations; it++) {
        vm_base work = base_new(h * w), diff = base_new(h * w), rows = base_new(h);
        vm_operand wk = v2(work, 0, h, w, (int64_t)w), df = v2(diff, 0, h, w, (int64_t)w);
        submit(vm_instr3(VM_OP_ADD, wk, center, north));
        submit(vm_instr3(VM_OP_ADD, wk, wk, south));
        submit(vm_instr3(VM_OP_ADD, wk, wk, east));
        submit(vm_instr3(VM_OP_ADD, wk, wk, west));
        submit(vm_instr3(VM_OP_MULTIPLY, wk, wk, constant(0.2)));
        submit(vm_instr3(VM_OP_SUBTRACT, df, wk, center));
        submit(vm_instr2(VM_OP_ABSOLUTE, df, df));
        if (delta != 0) check(vm_base_free(ctx, delta), "vm_base_free");
        delta = base_new(1);
        submit(vm_instr3(VM_OP_ADD_REDUCE, vm_operand_range(rows, 0, h), df, vm_operand_i64(1)));
        submit(vm_instr3(VM_OP_ADD_REDUCE, vm_operand_view(vm_view_scalar(delta, 0)), vm_operand_range(rows, 0, h),
                         vm_operand_i64(0)));
        submit(vm_instr2(VM_OP_IDENTITY, center, wk));
        check(vm_base_free(ctx, work), "vm_base_free");
        check(vm_base_free(ctx, diff), "vm_base_free");
        check(vm_base_free(ctx, rows), "vm_base_free");
    }
    *checksum = delta != 0 ? read_scalar(delta) : 0.0;
    double elapsed = now() - t0;
    if (delta != 0) check(vm_base_free(ctx, delta), "vm_base_free");
    check(vm_base_free(ctx, grid), "vm_base_free");
    check(vm_flush(ctx), "vm_flush");
    return elapsed;
}

int main(int argc, char **argv) {
    uint64_t h, w, iterations;
    if (argc < 5 || sscanf(argv[1], "%" SCNu64 "*%" SCNu64 "*%" SCNu64, &h, &w, &iterations) != 3 || h == 0 ||
        w == 0) {
        fprintf(stderr, "usage: %s h*w*iterations f64|f32 WARMUP REPS [CONFIG|-] [STACK|-]\n", argv[0]);
        return 1;
    }
    dtype = strcmp(argv[2], "f32") == 0 ? VM_DTYPE_F32 : VM_DTYPE_F64;
    int warmup = atoi(argv[3]), reps = atoi(argv[4]);
    const char *config = argc > 5 && strcmp(argv[5], "-") != 0 ? argv[5] : NULL;
    const char *stack = argc > 6 && strcmp(argv[6], "-") != 0 ? argv[6] : NULL;
    if (vm_abi_version() != VM_ABI_VERSION) {
        fprintf(stderr, "heat_equation.c: libvm.so has ABI %u, vm.h describes %u\n", vm_abi_version(), VM_ABI_VERSION);
        return 1;
    }
    check(vm_init_stack(config, stack, &ctx), "vm_init_stack");
    for (int r = 0; r < warmup + reps; r++) {
        double checksum;
        double t = repetition(h, w, iterations, &checksum);
        if (r >= warmup) printf("RESULT %.17g %.17g\n", t, checksum);
        fflush(stdout);
    }
    check(vm_shutdown(ctx), "vm_shutdown");
    return 0;
}
