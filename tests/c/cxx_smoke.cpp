// cxx_smoke.cpp: vm.h compiled as C++ (-std=c++11), linked against libvm.so, doing real work.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "vm.h"

namespace {

void check(int status, const char *what) {
    if (status != VM_OK) {
        std::fprintf(stderr, "%s: %s: %s\n", what, vm_status_name(status), vm_last_error());
        std::exit(1);
    }
}

}  // namespace

int main() {
    vm_context *ctx = nullptr;
    check(vm_init(nullptr, &ctx), "vm_init");
    vm_base a = 0, total = 0;
    check(vm_base_new(ctx, VM_DTYPE_I64, 100, &a), "vm_base_new");
    check(vm_base_new(ctx, VM_DTYPE_I64, 1, &total), "vm_base_new");
    std::vector<vm_instruction> prog;
    prog.push_back(vm_instr1(VM_OP_RANGE, vm_operand_range(a, 0, 100)));
    prog.push_back(vm_instr3(VM_OP_MULTIPLY, vm_operand_range(a, 0, 100), vm_operand_range(a, 0, 100),
                             vm_operand_range(a, 0, 100)));
    prog.push_back(vm_instr3(VM_OP_ADD_REDUCE, vm_operand_view(vm_view_scalar(total, 0)),
                             vm_operand_range(a, 0, 100), vm_operand_i64(0)));
    check(vm_submit(ctx, prog.data(), prog.size()), "vm_submit");
    check(vm_sync(ctx, total), "vm_sync");
    const void *data = nullptr;
    size_t nbytes = 0;
    check(vm_data(ctx, total, &data, &nbytes), "vm_data");
    const long long sum = *static_cast<const int64_t *>(data);
    std::printf("sum of squares below 100: %lld\n", sum);
    check(vm_shutdown(ctx), "vm_shutdown");
    return sum == 328350 ? 0 : 1;
}
