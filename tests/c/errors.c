/* errors.c: bad input through the C ABI. Every case must return its status code and leave a
 * vm_last_error() naming the problem; nothing may crash, and the context must stay usable.
 * Prints one "ok <case>: <status>" line per case (messages go to stderr). Run in a scratch
 * directory: it writes config files there. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    REQUIRE(fputs(text, f) >= 0);
    REQUIRE(fclose(f) == 0);
}

/* The harness runs this program with VM_STACK set to each stack it tests; the files written here
   name only an `interp` stack, so the cases that get past parsing ask for it by name (which
   overrides VM_STACK). */
static void bad_configs(void) {
    vm_context *ctx = (vm_context *)&ctx; /* not NULL: vm_init must reset it on failure */
    EXPECT_ERROR("init without out", VM_ERR_INVALID_ARGUMENT, "NULL", vm_init(NULL, NULL));
    EXPECT_ERROR("missing config file", VM_ERR_CONFIG, "not found", vm_init("no-such-dir/vm.toml", &ctx));
    REQUIRE(ctx == NULL);
    write_file("syntax.toml", "stack = \"interp\"\n[stacks]\ninterp = [\"node\", \"interp\"\n");
    EXPECT_ERROR("config syntax error", VM_ERR_CONFIG, "syntax.toml:", vm_init("syntax.toml", &ctx));
    write_file("key.toml", "stack = \"interp\"\n[stacks]\ninterp = [\"node\", \"interp\"]\n[interp]\nspeed = 11\n");
    EXPECT_ERROR("config unknown key", VM_ERR_CONFIG, "key.toml:5", vm_init_stack("key.toml", "interp", &ctx));
    EXPECT_ERROR("config unknown key named", VM_ERR_CONFIG, "speed", vm_init_stack("key.toml", "interp", &ctx));
    write_file("engine.toml", "stack = \"interp\"\n[stacks]\ninterp = [\"node\", \"warp-drive\"]\n");
    EXPECT_ERROR("config unknown engine", VM_ERR_CONFIG, "warp-drive", vm_init_stack("engine.toml", "interp", &ctx));
    write_file("good.toml", "stack = \"interp\"\n[stacks]\ninterp = [\"node\", \"interp\"]\n");
    EXPECT_ERROR("unknown stack", VM_ERR_CONFIG, "no-such-stack", vm_init_stack("good.toml", "no-such-stack", &ctx));
    REQUIRE(ctx == NULL);
    ctx = (vm_context *)&ctx;
    EXPECT_ERROR("empty stack name", VM_ERR_CONFIG, "the requested stack name is empty", vm_init_stack(NULL, "", &ctx));
    REQUIRE(ctx == NULL);
    /* A setting beyond what the machine can give is refused when the stack is planned, before
       anything is built: no thread is started. */
    write_file("threads.toml", "stack = \"cpu\"\n[stacks]\ncpu = [\"node\", \"cpu\"]\n[cpu]\nthreads = 100000\n");
    EXPECT_ERROR("too many threads", VM_ERR_CONFIG, "threads.toml:5", vm_init_stack("threads.toml", "cpu", &ctx));
    EXPECT_ERROR("too many threads names the limit", VM_ERR_CONFIG,
                 "[cpu] threads = 100000 is out of range: accepted are 0 to 1024",
                 vm_init_stack("threads.toml", "cpu", &ctx));
    REQUIRE(ctx == NULL);
    CHECK(vm_init_stack("good.toml", "interp", &ctx));
    REQUIRE(strcmp(vm_last_error(), "") == 0);
    CHECK(vm_shutdown(ctx));
}

static void null_and_dead_contexts(void) {
    vm_context *ctx = NULL;
    vm_base b = 0;
    EXPECT_ERROR("null context", VM_ERR_INVALID_ARGUMENT, "NULL", vm_base_new(NULL, VM_DTYPE_F64, 4, &b));
    EXPECT_ERROR("null context flush", VM_ERR_INVALID_ARGUMENT, "NULL", vm_flush(NULL));
    EXPECT_ERROR("null context shutdown", VM_ERR_INVALID_ARGUMENT, "NULL", vm_shutdown(NULL));
    EXPECT_ERROR("bogus context", VM_ERR_INVALID_ARGUMENT, "not a live context",
                 vm_flush((vm_context *)&b));
    CHECK(vm_init(NULL, &ctx));
    CHECK(vm_shutdown(ctx));
    EXPECT_ERROR("use after shutdown", VM_ERR_INVALID_ARGUMENT, "not a live context", vm_sync(ctx, 1));
    EXPECT_ERROR("double shutdown", VM_ERR_INVALID_ARGUMENT, "not a live context", vm_shutdown(ctx));
}

static vm_instruction add_f64(vm_base out, vm_base a, uint64_t n) {
    return vm_instr3(VM_OP_ADD, vm_operand_range(out, 0, n), vm_operand_range(a, 0, n), vm_operand_f64(1.0));
}

/* A constant operand of `dtype` whose 64-bit payload is `bits`, as a C program could write it by
   hand, bypassing the typed helpers' conversions. */
static vm_operand raw_constant(uint32_t dtype, uint64_t bits) {
    vm_operand o;
    memset(&o, 0, sizeof o);
    o.kind = VM_OPERAND_CONSTANT;
    o.u.constant.dtype = dtype;
    o.u.constant.value.u = bits;
    return o;
}

/* Constants whose value their dtype cannot hold are rejected, naming the operand and the range,
   as the text form rejects `300i8`; they used to be truncated silently (300 as an i8 is 44). */
static void constants_out_of_range(vm_context *ctx) {
    vm_base s8, u8, b, f;
    vm_instruction in;
    vm_operand c;
    CHECK(vm_base_new(ctx, VM_DTYPE_I8, 4, &s8));
    CHECK(vm_base_new(ctx, VM_DTYPE_U8, 4, &u8));
    CHECK(vm_base_new(ctx, VM_DTYPE_BOOL, 4, &b));
    CHECK(vm_base_new(ctx, VM_DTYPE_F32, 4, &f));

    in = vm_instr3(VM_OP_ADD, vm_operand_range(s8, 0, 4), vm_operand_range(s8, 0, 4), raw_constant(VM_DTYPE_I8, 300));
    EXPECT_ERROR("i8 constant 300", VM_ERR_INVALID_INSTRUCTION,
                 "instruction 0, operand 2: constant 300 is out of range for i8 (-128 to 127)", vm_submit(ctx, &in, 1));
    c = raw_constant(VM_DTYPE_I8, 0);
    c.u.constant.value.i = -129;
    in.operands[2] = c;
    EXPECT_ERROR("i8 constant -129", VM_ERR_INVALID_INSTRUCTION, "constant -129 is out of range for i8",
                 vm_submit(ctx, &in, 1));
    in = vm_instr3(VM_OP_ADD, vm_operand_range(u8, 0, 4), vm_operand_range(u8, 0, 4),
                   raw_constant(VM_DTYPE_U8, ((uint64_t)1 << 40) + 7));
    EXPECT_ERROR("u8 constant 2^40+7", VM_ERR_INVALID_INSTRUCTION,
                 "operand 2: constant 1099511627783 is out of range for u8 (0 to 255)", vm_submit(ctx, &in, 1));
    in = vm_instr2(VM_OP_IDENTITY, vm_operand_range(b, 0, 4), raw_constant(VM_DTYPE_BOOL, 2));
    EXPECT_ERROR("bool constant 2", VM_ERR_INVALID_INSTRUCTION, "operand 1: constant 2 is out of range for bool",
                 vm_submit(ctx, &in, 1));
    c = raw_constant(VM_DTYPE_F32, 0);
    c.u.constant.value.f = 1e300;
    in = vm_instr3(VM_OP_ADD, vm_operand_range(f, 0, 4), vm_operand_range(f, 0, 4), c);
    EXPECT_ERROR("f32 constant 1e300", VM_ERR_INVALID_INSTRUCTION, "operand 2: constant 1e300 is out of range for f32",
                 vm_submit(ctx, &in, 1));

    /* What f32 can hold after rounding, and the non-finite values, are constants like any other. */
    c.u.constant.value.f = 0.1;
    in.operands[2] = c;
    CHECK(vm_submit(ctx, &in, 1));
    c.u.constant.value.f = -HUGE_VAL;
    in.operands[2] = c;
    CHECK(vm_submit(ctx, &in, 1));
    in = vm_instr3(VM_OP_ADD, vm_operand_range(s8, 0, 4), vm_operand_range(s8, 0, 4), vm_operand_i8(-128));
    CHECK(vm_submit(ctx, &in, 1));
    {
        size_t nbytes;
        const float *x = (const float *)synced_data(ctx, f, &nbytes);
        const int8_t *y = (const int8_t *)synced_data(ctx, s8, &nbytes);
        REQUIRE(x[0] < 0 && x[0] * 2 == x[0] && y[3] == -128);
        printf("ok f32 constants that round or are infinite pass\n");
    }
    CHECK(vm_base_free(ctx, s8));
    CHECK(vm_base_free(ctx, u8));
    CHECK(vm_base_free(ctx, b));
    CHECK(vm_base_free(ctx, f));
}

static void bad_instructions(vm_context *ctx) {
    vm_base a, f;
    vm_instruction in[2];
    uint64_t shape[17];
    int64_t stride[17];
    int d;
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 8, &a));
    CHECK(vm_base_new(ctx, VM_DTYPE_F32, 8, &f));

    EXPECT_ERROR("null instructions", VM_ERR_INVALID_ARGUMENT, "instrs is NULL", vm_submit(ctx, NULL, 1));
    CHECK(vm_submit(ctx, NULL, 0));

    in[0] = add_f64(a, a, 8);
    in[1] = add_f64(a, a, 8);
    in[1].opcode = 999;
    EXPECT_ERROR("unknown opcode", VM_ERR_UNKNOWN_OPCODE, "999", vm_submit(ctx, in, 2));
    in[1].opcode = VM_OP_EXTENSION_BASE + 5;
    EXPECT_ERROR("unregistered extension", VM_ERR_UNKNOWN_OPCODE, "1029", vm_submit(ctx, in, 2));

    in[1] = add_f64(a, a, 8);
    in[1].operands[1].u.view.start = 3; /* elements 3..10 of an 8-element base */
    EXPECT_ERROR("view out of bounds", VM_ERR_INVALID_INSTRUCTION, "instruction 1, operand 1", vm_submit(ctx, in, 2));
    EXPECT_ERROR("view out of bounds says so", VM_ERR_INVALID_INSTRUCTION, "outside", vm_submit(ctx, in, 2));
    in[1] = vm_instr3(VM_OP_ADD, vm_operand_range(a, -1, 2), vm_operand_range(a, 0, 2), vm_operand_range(a, 0, 2));
    EXPECT_ERROR("negative start", VM_ERR_INVALID_INSTRUCTION, "operand 0", vm_submit(ctx, in, 2));

    in[1] = vm_instr3(VM_OP_ADD, vm_operand_range(a, 0, 8), vm_operand_range(f, 0, 8), vm_operand_range(a, 0, 8));
    EXPECT_ERROR("dtype mismatch", VM_ERR_INVALID_INSTRUCTION, "dtype mismatch", vm_submit(ctx, in, 2));
    in[1] = vm_instr3(VM_OP_ADD, vm_operand_range(a, 0, 8), vm_operand_range(a, 0, 8), vm_operand_f32(1.0f));
    EXPECT_ERROR("constant dtype mismatch", VM_ERR_INVALID_INSTRUCTION, "operand 2", vm_submit(ctx, in, 2));

    in[1] = vm_instr3(VM_OP_ADD, vm_operand_range(a, 0, 8), vm_operand_range(a, 0, 8), vm_operand_f64(1.0));
    in[1].operands[2].u.constant.dtype = 77;
    EXPECT_ERROR("constant of unknown dtype", VM_ERR_UNKNOWN_DTYPE, "77", vm_submit(ctx, in, 2));

    for (d = 0; d < 17; d++) {
        shape[d] = 1;
        stride[d] = 0;
    }
    in[1] = vm_instr2(VM_OP_IDENTITY, vm_operand_view(vm_view_nd(a, 0, 17, shape, stride)), vm_operand_f64(0.0));
    EXPECT_ERROR("too many dimensions", VM_ERR_INVALID_INSTRUCTION, "17 dimensions", vm_submit(ctx, in, 2));

    in[1] = add_f64(a, a, 8);
    in[1].noperands = 7;
    EXPECT_ERROR("too many operands", VM_ERR_INVALID_INSTRUCTION, "at most 6", vm_submit(ctx, in, 2));
    in[1].noperands = 2;
    EXPECT_ERROR("wrong arity", VM_ERR_INVALID_INSTRUCTION, "takes 3 operands", vm_submit(ctx, in, 2));

    in[1] = add_f64(a, a, 8);
    in[1].operands[1].kind = 0;
    EXPECT_ERROR("bad operand kind", VM_ERR_INVALID_INSTRUCTION, "operand kind 0", vm_submit(ctx, in, 2));

    in[1] = add_f64(a, a, 8);
    in[1].operands[0].u.view.base = 12345;
    EXPECT_ERROR("unknown base", VM_ERR_INVALID_INSTRUCTION, "base 12345 does not exist", vm_submit(ctx, in, 2));

    in[1] = vm_instr3(VM_OP_ADD, vm_operand_view(vm_view_1d(a, 0, 8, 0)), vm_operand_range(a, 0, 8),
                      vm_operand_range(a, 0, 8));
    EXPECT_ERROR("broadcast output", VM_ERR_INVALID_INSTRUCTION, "more than once", vm_submit(ctx, in, 2));

    /* NumPy: "attempt to get argmax of an empty sequence"; here refused when submitted. */
    {
        vm_base p;
        CHECK(vm_base_new(ctx, VM_DTYPE_I64, 2, &p));
        in[1] = vm_instr3(VM_OP_ARGMAX_REDUCE, vm_operand_range(p, 0, 2), vm_operand_view(vm_view_2d(a, 0, 2, 0, 4, 1)),
                          vm_operand_i64(1));
        EXPECT_ERROR("argmax of an empty axis", VM_ERR_INVALID_INSTRUCTION,
                     "instruction 1, operand 1: argmax_reduce: attempt to get the argmax of an empty sequence",
                     vm_submit(ctx, in, 2));
        in[1].opcode = VM_OP_ARGMIN_REDUCE;
        EXPECT_ERROR("argmin of an empty axis", VM_ERR_INVALID_INSTRUCTION, "the argmin of an empty sequence",
                     vm_submit(ctx, in, 2));
        CHECK(vm_base_free(ctx, p));
    }

    /* None of the rejected batches ran: a is still all zeros. */
    {
        size_t nbytes;
        const double *x = (const double *)synced_data(ctx, a, &nbytes);
        for (d = 0; d < 8; d++) {
            REQUIRE(x[d] == 0.0);
        }
        printf("ok rejected batches queued nothing\n");
    }
    CHECK(vm_base_free(ctx, a));
    CHECK(vm_base_free(ctx, f));
}

static void bad_bases_and_data(vm_context *ctx) {
    vm_base a = 0, gone;
    const void *data = NULL;
    size_t nbytes = 0;
    double x[4] = {1, 2, 3, 4};
    uint32_t op = 0;
    vm_instruction in;
    EXPECT_ERROR("unknown dtype", VM_ERR_UNKNOWN_DTYPE, "99", vm_base_new(ctx, 99, 4, &a));
    EXPECT_ERROR("base without out", VM_ERR_INVALID_ARGUMENT, "NULL", vm_base_new(ctx, VM_DTYPE_F64, 4, NULL));
    EXPECT_ERROR("huge base", VM_ERR_INVALID_ARGUMENT, "too large", vm_base_new(ctx, VM_DTYPE_F64, UINT64_MAX / 2, &a));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 4, &a));

    in = vm_instr2(VM_OP_IDENTITY, vm_operand_range(a, 0, 4), vm_operand_f64(2.0));
    CHECK(vm_submit(ctx, &in, 1));
    EXPECT_ERROR("data before sync", VM_ERR_PROTOCOL, "not synced", vm_data(ctx, a, &data, &nbytes));
    CHECK(vm_sync(ctx, a));
    EXPECT_ERROR("data without pointer", VM_ERR_INVALID_ARGUMENT, "NULL", vm_data(ctx, a, NULL, &nbytes));
    EXPECT_ERROR("data without size", VM_ERR_INVALID_ARGUMENT, "NULL", vm_data(ctx, a, &data, NULL));
    CHECK(vm_data(ctx, a, &data, &nbytes));
    REQUIRE(nbytes == 4 * sizeof(double) && ((const double *)data)[3] == 2.0);
    CHECK(vm_submit(ctx, &in, 1));
    EXPECT_ERROR("data after a write", VM_ERR_PROTOCOL, "not synced", vm_data(ctx, a, &data, &nbytes));

    EXPECT_ERROR("write from NULL", VM_ERR_INVALID_ARGUMENT, "src is NULL", vm_write(ctx, a, 0, NULL, 8));
    EXPECT_ERROR("write of a partial element", VM_ERR_INVALID_ARGUMENT, "whole number", vm_write(ctx, a, 0, x, 7));
    EXPECT_ERROR("write past the end", VM_ERR_INVALID_ARGUMENT, "elements 2..6", vm_write(ctx, a, 2, x, sizeof x));
    CHECK(vm_write(ctx, a, 0, NULL, 0));

    EXPECT_ERROR("unknown extension", VM_ERR_UNSUPPORTED, "warp_drive", vm_extension(ctx, "warp_drive", &op));
    EXPECT_ERROR("extension without name", VM_ERR_INVALID_ARGUMENT, "name is NULL", vm_extension(ctx, NULL, &op));
    EXPECT_ERROR("extension without out", VM_ERR_INVALID_ARGUMENT, "NULL", vm_extension(ctx, "matmul", NULL));
    /* An extension method the VM knows is checked by vm_submit, like an opcode, not at the flush. */
    CHECK(vm_extension(ctx, "matmul", &op));
    in = vm_instr1(op, vm_operand_view(vm_view_2d(a, 0, 2, 2, 2, 1)));
    EXPECT_ERROR("matmul with one operand", VM_ERR_INVALID_INSTRUCTION,
                 "instruction 0: matmul takes 3 operands (out, a, b), got 1", vm_submit(ctx, &in, 1));
    in = vm_instr3(op, vm_operand_view(vm_view_2d(a, 0, 2, 2, 2, 1)), vm_operand_view(vm_view_2d(a, 0, 2, 2, 2, 1)),
                   vm_operand_f64(1.0));
    EXPECT_ERROR("matmul with a constant", VM_ERR_INVALID_INSTRUCTION, "operand 2: matmul's operands must be views",
                 vm_submit(ctx, &in, 1));
    CHECK(vm_flush(ctx));

    gone = a;
    CHECK(vm_base_free(ctx, a));
    in = vm_instr2(VM_OP_IDENTITY, vm_operand_range(gone, 0, 4), vm_operand_f64(2.0));
    EXPECT_ERROR("use after free", VM_ERR_INVALID_INSTRUCTION, "does not exist", vm_submit(ctx, &in, 1));
    EXPECT_ERROR("sync after free", VM_ERR_UNKNOWN_BASE, "unknown base", vm_sync(ctx, gone));
    EXPECT_ERROR("data after free", VM_ERR_UNKNOWN_BASE, "unknown base", vm_data(ctx, gone, &data, &nbytes));
    EXPECT_ERROR("write after free", VM_ERR_UNKNOWN_BASE, "unknown base", vm_write(ctx, gone, 0, x, 8));
    EXPECT_ERROR("double free", VM_ERR_UNKNOWN_BASE, "unknown base", vm_base_free(ctx, gone));
    EXPECT_ERROR("base zero", VM_ERR_UNKNOWN_BASE, "unknown base", vm_sync(ctx, 0));
}

static void statuses(void) {
    REQUIRE(strcmp(vm_status_name(VM_OK), "VM_OK") == 0);
    REQUIRE(strcmp(vm_status_name(VM_ERR_CONFIG), "VM_ERR_CONFIG") == 0);
    REQUIRE(strcmp(vm_status_name(VM_ERR_INTERNAL), "VM_ERR_INTERNAL") == 0);
    REQUIRE(strcmp(vm_status_name(-3), "VM_ERR_UNKNOWN_STATUS") == 0);
    REQUIRE(vm_last_error() != NULL);
    printf("ok status names\n");
}

int main(void) {
    vm_context *ctx = NULL;
    bad_configs();
    null_and_dead_contexts();
    CHECK(vm_init(NULL, &ctx));
    bad_instructions(ctx);
    constants_out_of_range(ctx);
    bad_bases_and_data(ctx);
    /* After all that, the context still works. */
    {
        vm_base b;
        size_t nbytes;
        const double *x;
        vm_instruction in;
        CHECK(vm_base_new(ctx, VM_DTYPE_F64, 3, &b));
        in = vm_instr1(VM_OP_RANGE, vm_operand_range(b, 0, 3));
        CHECK(vm_submit(ctx, &in, 1));
        x = (const double *)synced_data(ctx, b, &nbytes);
        REQUIRE(x[0] == 0.0 && x[2] == 2.0);
        REQUIRE(strcmp(vm_last_error(), "") == 0);
        printf("ok context usable after errors\n");
    }
    CHECK(vm_shutdown(ctx));
    statuses();
    printf("errors ok\n");
    return 0;
}
