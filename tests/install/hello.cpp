// hello.cpp: the installed libvm from C++17 (see tests/tests/install.rs). The computation of
// hello.c through vm.h, printing "sum = 502000"; then, when the installed tree has the C++
// header vm.hpp, the same through it ("vm.hpp: sum = 502000"), else "vm.hpp: no".
#if __has_include(<vm.hpp>)
#include <vm.hpp>
#define HELLO_HAVE_VM_HPP 1
#else
#define HELLO_HAVE_VM_HPP 0
#endif
#include <vm.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

void check(int status, const std::string &what) {
    if (status != VM_OK) {
        std::fprintf(stderr, "%s: %s: %s\n", what.c_str(), vm_status_name(status), vm_last_error());
        std::exit(1);
    }
}

}  // namespace

int main() {
    constexpr uint64_t n = 1000;
    vm_context *ctx = nullptr;
    check(vm_init(nullptr, &ctx), "vm_init");
    std::array<vm_base, 4> b{};  // x, y, z, sum
    for (std::size_t i = 0; i < b.size(); i++) {
        check(vm_base_new(ctx, VM_DTYPE_F64, i + 1 < b.size() ? n : 1, &b[i]), "vm_base_new");
    }
    const auto [x, y, z, sum] = b;
    const vm_operand xv = vm_operand_range(x, 0, n);
    const vm_operand yv = vm_operand_range(y, 0, n);
    const vm_operand zv = vm_operand_range(z, 0, n);
    const std::array<vm_instruction, 4> prog{
        vm_instr1(VM_OP_RANGE, xv),
        vm_instr2(VM_OP_IDENTITY, yv, vm_operand_f64(2.5)),
        vm_instr3(VM_OP_ADD, zv, xv, yv),
        vm_instr3(VM_OP_ADD_REDUCE, vm_operand_view(vm_view_scalar(sum, 0)), zv, vm_operand_i64(0)),
    };
    check(vm_submit(ctx, prog.data(), prog.size()), "vm_submit");
    check(vm_sync(ctx, sum), "vm_sync");
    const void *data = nullptr;
    std::size_t nbytes = 0;
    check(vm_data(ctx, sum, &data, &nbytes), "vm_data");
    std::printf("sum = %g\n", *static_cast<const double *>(data));
    check(vm_shutdown(ctx), "vm_shutdown");
#if HELLO_HAVE_VM_HPP
    const double s = vm::sum(vm::arange<double>(n) + 2.5).item();
    std::printf("vm.hpp: sum = %g\n", s);
#else
    std::printf("vm.hpp: no\n");
#endif
    return 0;
}
