/* out_of_memory.c: valid instructions that need more memory than the machine has fail with
 * VM_ERR_OUT_OF_MEMORY and a message naming the base and the size, instead of aborting the
 * process; afterwards the context still computes and other bases keep their data. Broadcast
 * (stride-0) views are read in place: gathering from one of any extent needs no memory. The
 * sizes (2^40 f64 elements, 8 TiB; 2^61 i16 elements, 4 EiB) cannot be granted even lazily.
 * Prints one "ok <case>" line per case (messages go to stderr). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define HUGE (UINT64_C(1) << 40)

/* "allocating <nbytes> bytes for base #<base>": what an out-of-memory message must contain. */
static const char *oom_needle(uint64_t nbytes, vm_base base) {
    static char buf[128];
    snprintf(buf, sizeof buf, "allocating %llu bytes for base #%llu", (unsigned long long)nbytes,
             (unsigned long long)base);
    return buf;
}

static vm_base new_f64(vm_context *ctx, uint64_t n, const double *values) {
    vm_base b;
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, n, &b));
    if (values != NULL) {
        CHECK(vm_write(ctx, b, 0, values, n * sizeof(double)));
    }
    return b;
}

/* keep still holds {1.5, 2.5, 3.5}, and the context still computes. */
static void still_works(vm_context *ctx, vm_base keep) {
    size_t nbytes;
    const double *x = (const double *)synced_data(ctx, keep, &nbytes);
    vm_base out = new_f64(ctx, 3, NULL);
    vm_instruction in = vm_instr3(VM_OP_ADD, vm_operand_range(out, 0, 3), vm_operand_range(keep, 0, 3),
                                  vm_operand_f64(1.0));
    REQUIRE(nbytes == 3 * sizeof(double) && x[0] == 1.5 && x[1] == 2.5 && x[2] == 3.5);
    CHECK(vm_submit(ctx, &in, 1));
    x = (const double *)synced_data(ctx, out, &nbytes);
    REQUIRE(x[0] == 2.5 && x[1] == 3.5 && x[2] == 4.5);
    REQUIRE(strcmp(vm_last_error(), "") == 0);
    CHECK(vm_base_free(ctx, out));
}

static void gather_from_broadcasts(vm_context *ctx, vm_base keep) {
    const double seven = 7.25;
    const uint64_t extents[2] = {HUGE, UINT64_MAX};
    vm_base one = new_f64(ctx, 1, &seven);
    int e;
    for (e = 0; e < 2; e++) {
        uint64_t positions[3];
        vm_base index, out = new_f64(ctx, 3, NULL);
        size_t nbytes;
        const double *x;
        vm_instruction in;
        positions[0] = 0;
        positions[1] = extents[e] - 1;
        positions[2] = 12345;
        CHECK(vm_base_new(ctx, VM_DTYPE_U64, 3, &index));
        CHECK(vm_write(ctx, index, 0, positions, sizeof positions));
        in = vm_instr3(VM_OP_GATHER, vm_operand_range(out, 0, 3), vm_operand_view(vm_view_1d(one, 0, extents[e], 0)),
                       vm_operand_range(index, 0, 3));
        CHECK(vm_submit(ctx, &in, 1));
        x = (const double *)synced_data(ctx, out, &nbytes);
        REQUIRE(x[0] == 7.25 && x[1] == 7.25 && x[2] == 7.25);
        CHECK(vm_base_free(ctx, index));
        CHECK(vm_base_free(ctx, out));
    }
    printf("ok gather from broadcasts of extent 2^40 and 2^64-1\n");
    CHECK(vm_base_free(ctx, one));
    still_works(ctx, keep);
}

/* Submits `in` and syncs `base`: an instruction on a fresh base runs at once (a base nothing has
 * written counts as in host memory) or queued, so its error comes from one of the two calls. */
static int submit_and_sync(vm_context *ctx, const vm_instruction *in, vm_base base) {
    int status = vm_submit(ctx, in, 1);
    return status != VM_OK ? status : vm_sync(ctx, base);
}

static void gather_from_a_huge_base(vm_context *ctx, vm_base keep) {
    const uint32_t positions[2] = {0, 1};
    vm_base src = new_f64(ctx, HUGE, NULL), out = new_f64(ctx, 2, NULL), index;
    vm_instruction in;
    CHECK(vm_base_new(ctx, VM_DTYPE_U32, 2, &index));
    CHECK(vm_write(ctx, index, 0, positions, sizeof positions));
    in = vm_instr3(VM_OP_GATHER, vm_operand_range(out, 0, 2), vm_operand_range(src, 0, HUGE),
                   vm_operand_range(index, 0, 2));
    EXPECT_ERROR("gather from a 2^40 base", VM_ERR_OUT_OF_MEMORY, oom_needle(HUGE * 8, src),
                 submit_and_sync(ctx, &in, out));
    CHECK(vm_base_free(ctx, src));
    CHECK(vm_base_free(ctx, out));
    CHECK(vm_base_free(ctx, index));
    still_works(ctx, keep);
}

static void scatter_into_a_huge_base(vm_context *ctx, vm_base keep) {
    const double values[6] = {1, 2, 3, 4, 5, 6};
    int64_t positions[6] = {0, 1, 2, 3, 0, 0};
    vm_base dst = new_f64(ctx, HUGE, NULL), src = new_f64(ctx, 6, values), index;
    vm_instruction in;
    positions[4] = (int64_t)HUGE - 2;
    positions[5] = (int64_t)HUGE - 1;
    CHECK(vm_base_new(ctx, VM_DTYPE_I64, 6, &index));
    CHECK(vm_write(ctx, index, 0, positions, sizeof positions));
    in = vm_instr3(VM_OP_SCATTER, vm_operand_range(dst, 0, HUGE), vm_operand_range(src, 0, 6),
                   vm_operand_range(index, 0, 6));
    EXPECT_ERROR("scatter of 6 values into a 2^40 base", VM_ERR_OUT_OF_MEMORY, oom_needle(HUGE * 8, dst),
                 submit_and_sync(ctx, &in, dst));
    CHECK(vm_base_free(ctx, dst));
    CHECK(vm_base_free(ctx, src));
    CHECK(vm_base_free(ctx, index));
    still_works(ctx, keep);
}

static void reductions_into_a_huge_base(vm_context *ctx, vm_base keep) {
    const double x = 1.0;
    vm_base one = new_f64(ctx, 1, &x), out = new_f64(ctx, HUGE, NULL);
    vm_instruction in = vm_instr3(VM_OP_ADD_REDUCE, vm_operand_range(out, 0, HUGE),
                                  vm_operand_view(vm_view_2d(one, 0, HUGE, 2, 0, 0)), vm_operand_i64(1));
    CHECK(vm_submit(ctx, &in, 1));
    EXPECT_ERROR("add_reduce of a 2^40 x 2 broadcast", VM_ERR_OUT_OF_MEMORY, oom_needle(HUGE * 8, out),
                 vm_flush(ctx));
    still_works(ctx, keep);
    in = vm_instr3(VM_OP_ADD_ACCUMULATE, vm_operand_range(out, 0, HUGE), vm_operand_view(vm_view_1d(one, 0, HUGE, 0)),
                   vm_operand_i64(0));
    CHECK(vm_submit(ctx, &in, 1));
    EXPECT_ERROR("add_accumulate of a 2^40 broadcast", VM_ERR_OUT_OF_MEMORY, oom_needle(HUGE * 8, out),
                 vm_flush(ctx));
    CHECK(vm_base_free(ctx, one));
    CHECK(vm_base_free(ctx, out));
    still_works(ctx, keep);
}

static void range_over_a_huge_base(vm_context *ctx, vm_base keep) {
    const uint64_t n = UINT64_C(1) << 61;
    vm_base acc;
    vm_instruction in;
    CHECK(vm_base_new(ctx, VM_DTYPE_I16, n, &acc));
    in = vm_instr1(VM_OP_RANGE, vm_operand_range(acc, 0, n));
    CHECK(vm_submit(ctx, &in, 1));
    EXPECT_ERROR("range over 2^61 i16", VM_ERR_OUT_OF_MEMORY, oom_needle(n * 2, acc), vm_sync(ctx, acc));
    CHECK(vm_base_free(ctx, acc));
    still_works(ctx, keep);
}

int main(void) {
    const double kept[3] = {1.5, 2.5, 3.5};
    vm_context *ctx = NULL;
    vm_base keep;
    CHECK(vm_init(NULL, &ctx));
    keep = new_f64(ctx, 3, kept);
    gather_from_broadcasts(ctx, keep);
    gather_from_a_huge_base(ctx, keep);
    scatter_into_a_huge_base(ctx, keep);
    reductions_into_a_huge_base(ctx, keep);
    range_over_a_huge_base(ctx, keep);
    CHECK(vm_base_free(ctx, keep));
    CHECK(vm_shutdown(ctx));
    printf("out_of_memory ok\n");
    return 0;
}
