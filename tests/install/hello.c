/* hello.c: the installed libvm as a C program uses it (see tests/tests/install.rs).
 * x = 0, 1, ..., 999; y = 2.5 everywhere; z = x + y; sum = z summed.
 * Prints "sum = 502000" (499500 + 1000 * 2.5). */
#include <stdio.h>
#include <stdlib.h>

#include <vm.h>

static void check(int status, const char *what) {
    if (status != VM_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, vm_status_name(status), vm_last_error());
        exit(1);
    }
}

int main(void) {
    enum { N = 1000 };
    vm_context *ctx = NULL;
    vm_base x, y, z, sum;
    const void *data;
    size_t nbytes;

    if (vm_abi_version() != VM_ABI_VERSION) {
        fprintf(stderr, "libvm has ABI %u, vm.h describes %u\n", vm_abi_version(), VM_ABI_VERSION);
        return 1;
    }
    check(vm_init(NULL, &ctx), "vm_init");
    check(vm_base_new(ctx, VM_DTYPE_F64, N, &x), "vm_base_new");
    check(vm_base_new(ctx, VM_DTYPE_F64, N, &y), "vm_base_new");
    check(vm_base_new(ctx, VM_DTYPE_F64, N, &z), "vm_base_new");
    check(vm_base_new(ctx, VM_DTYPE_F64, 1, &sum), "vm_base_new");
    {
        vm_operand xv = vm_operand_range(x, 0, N);
        vm_operand yv = vm_operand_range(y, 0, N);
        vm_operand zv = vm_operand_range(z, 0, N);
        vm_instruction prog[4];
        prog[0] = vm_instr1(VM_OP_RANGE, xv);                           /* x = 0, 1, ... */
        prog[1] = vm_instr2(VM_OP_IDENTITY, yv, vm_operand_f64(2.5));  /* y = 2.5 */
        prog[2] = vm_instr3(VM_OP_ADD, zv, xv, yv);                     /* z = x + y */
        prog[3] = vm_instr3(VM_OP_ADD_REDUCE, vm_operand_view(vm_view_scalar(sum, 0)), zv,
                            vm_operand_i64(0));                         /* sum = z summed */
        check(vm_submit(ctx, prog, 4), "vm_submit");
    }
    check(vm_sync(ctx, sum), "vm_sync");
    check(vm_data(ctx, sum, &data, &nbytes), "vm_data");
    printf("abi %u\n", vm_abi_version());
    printf("sum = %g\n", *(const double *)data);
    check(vm_shutdown(ctx), "vm_shutdown");
    return 0;
}
