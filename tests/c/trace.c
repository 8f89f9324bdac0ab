/* trace.c: vm_trace_start and vm_trace_stop around a small program: a stencil loop over a large
 * base (kernels), steps on a small one (run at once), a host write and a read back. Writes the
 * trace to argv[1] (without one, drops it); then checks that a trace nobody can write is a clear
 * error. */
#include <stdint.h>
#include <stdio.h>

#include "check.h"

#define N 200000
#define SMALL 16

int main(int argc, char **argv) {
    vm_context *ctx;
    vm_base big, small;
    double host[SMALL];
    const double *x;
    size_t nbytes;
    int i;
    vm_instruction prog[2];
    if (argc > 2) {
        fprintf(stderr, "usage: trace [TRACE.json]\n");
        return 2;
    }
    CHECK(vm_trace_start());
    CHECK(vm_init(NULL, &ctx));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, N, &big));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, SMALL, &small));
    prog[0] = vm_instr1(VM_OP_RANGE, vm_operand_range(big, 0, N));
    CHECK(vm_submit(ctx, prog, 1));
    for (i = 0; i < 10; i++) {
        /* big[1:-1] = big[:-2] * 0.5 + 1 */
        prog[0] = vm_instr3(VM_OP_MULTIPLY, vm_operand_range(big, 1, N - 2), vm_operand_range(big, 0, N - 2),
                            vm_operand_f64(0.5));
        prog[1] = vm_instr3(VM_OP_ADD, vm_operand_range(big, 1, N - 2), vm_operand_range(big, 1, N - 2),
                            vm_operand_f64(1.0));
        CHECK(vm_submit(ctx, prog, 2));
        CHECK(vm_flush(ctx));
    }
    for (i = 0; i < SMALL; i++) {
        host[i] = i;
    }
    CHECK(vm_write(ctx, small, 0, host, sizeof host));
    prog[0] = vm_instr3(VM_OP_ADD, vm_operand_range(small, 0, SMALL), vm_operand_range(small, 0, SMALL),
                        vm_operand_f64(1.0));
    CHECK(vm_submit(ctx, prog, 1));
    x = (const double *)synced_data(ctx, small, &nbytes);
    REQUIRE(nbytes == sizeof host && x[SMALL - 1] == SMALL);
    x = (const double *)synced_data(ctx, big, &nbytes);
    REQUIRE(x[0] == 0.0 && x[N - 1] == N - 1);
    CHECK(vm_shutdown(ctx));
    CHECK(vm_trace_stop(argc == 2 ? argv[1] : NULL));
    /* A trace nobody can write is an error naming the file; NULL drops what was recorded. */
    CHECK(vm_trace_start());
    EXPECT_ERROR("unwritable trace", VM_ERR_INVALID_ARGUMENT, "cannot write the trace to",
                 vm_trace_stop("/nonexistent-dir/trace.json"));
    CHECK(vm_trace_stop(NULL));
    printf("trace ok\n");
    return 0;
}
