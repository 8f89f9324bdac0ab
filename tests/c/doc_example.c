/* example.c: y = x * x + 1 on eight points, and the sum of y, computed by the VM. */
#include <stdio.h>
#include <stdlib.h>

#include "vm.h"

/* Stops the program with the library's explanation when a call fails. */
static void check(int status) {
    if (status != VM_OK) {
        fprintf(stderr, "vm: %s: %s\n", vm_status_name(status), vm_last_error());
        exit(1);
    }
}

int main(void) {
    enum { N = 8 };
    vm_context *ctx = NULL;
    vm_base x, y, sum;
    double xs[N];
    const void *data;
    size_t nbytes;
    int i;

    /* The stack comes from the configuration (VM_CONFIG, ./vm.toml, ..., or the built-in one). */
    check(vm_init(NULL, &ctx));
    check(vm_base_new(ctx, VM_DTYPE_F64, N, &x));
    check(vm_base_new(ctx, VM_DTYPE_F64, N, &y));
    check(vm_base_new(ctx, VM_DTYPE_F64, 1, &sum));

    /* Host data goes in with vm_write. */
    for (i = 0; i < N; i++) {
        xs[i] = 0.5 * i;
    }
    check(vm_write(ctx, x, 0, xs, sizeof xs));

    /* Instructions are queued; operand 0 is the output. */
    {
        vm_operand xv = vm_operand_range(x, 0, N); /* elements 0..N-1 of x */
        vm_operand yv = vm_operand_range(y, 0, N);
        vm_instruction prog[3];
        prog[0] = vm_instr3(VM_OP_MULTIPLY, yv, xv, xv);              /* y = x * x */
        prog[1] = vm_instr3(VM_OP_ADD, yv, yv, vm_operand_f64(1.0));  /* y = y + 1 */
        prog[2] = vm_instr3(VM_OP_ADD_REDUCE, vm_operand_view(vm_view_scalar(sum, 0)), yv,
                            vm_operand_i64(0));                      /* sum = y summed along axis 0 */
        check(vm_submit(ctx, prog, 3));
    }

    /* Results are read after a sync; the pointer is valid until y is next written or freed. */
    check(vm_sync(ctx, y));
    check(vm_data(ctx, y, &data, &nbytes));
    for (i = 0; i < (int)(nbytes / sizeof(double)); i++) {
        printf("y[%d] = %g\n", i, ((const double *)data)[i]);
    }
    check(vm_sync(ctx, sum));
    check(vm_data(ctx, sum, &data, &nbytes));
    printf("sum = %g\n", *(const double *)data);

    check(vm_base_free(ctx, x));
    check(vm_base_free(ctx, y));
    check(vm_base_free(ctx, sum));
    check(vm_shutdown(ctx));
    return 0;
}
