/* faults.c: a flush stopped part way leaves its context usable.
 *
 * 1. vm_interrupt from a second thread stops a flush of 2^40 additions (minutes of work on any
 *    engine) with VM_ERR_INTERRUPTED; the context then computes again.
 * 2. A kernel block that panics (injected with VM_INJECT_PANIC, on a worker thread and on
 *    the calling thread) fails that call with VM_ERR_INTERNAL on the cpu engine; the next call
 *    on the same context computes correctly. Other engines ignore the variable, so the call
 *    succeeds there; stdout is the same on every stack and stderr says which happened.
 * Prints one "ok <case>" line per case. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define ROW (UINT64_C(1) << 20)

static void sleep_ms(long ms) {
    struct timespec t;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
}

/* Computes {1.5, 2.5, 3.5} + 1 and checks it. */
static void still_works(vm_context *ctx) {
    const double values[3] = {1.5, 2.5, 3.5};
    vm_base in, out;
    size_t nbytes;
    const double *x;
    vm_instruction instr;
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 3, &in));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, 3, &out));
    CHECK(vm_write(ctx, in, 0, values, sizeof values));
    instr = vm_instr3(VM_OP_ADD, vm_operand_range(out, 0, 3), vm_operand_range(in, 0, 3), vm_operand_f64(1.0));
    CHECK(vm_submit(ctx, &instr, 1));
    x = (const double *)synced_data(ctx, out, &nbytes);
    REQUIRE(nbytes == sizeof values && x[0] == 2.5 && x[1] == 3.5 && x[2] == 4.5);
    CHECK(vm_base_free(ctx, in));
    CHECK(vm_base_free(ctx, out));
}

struct interrupter {
    vm_context *ctx;
    volatile int done;
};

/* Asks for a stop every 20 ms until told the flush returned (a request made before the flush
 * started is withdrawn when it starts, so one request alone could come too early). */
static void *interrupt_until_done(void *arg) {
    struct interrupter *it = (struct interrupter *)arg;
    sleep_ms(100);
    while (!__atomic_load_n(&it->done, __ATOMIC_SEQ_CST)) {
        CHECK(vm_interrupt(it->ctx));
        sleep_ms(20);
    }
    return NULL;
}

static void interrupt_a_long_flush(void) {
    vm_context *ctx;
    vm_base row, sums;
    vm_instruction instr;
    pthread_t thread;
    struct interrupter it;
    uint64_t shape[2];
    int64_t stride[2];
    const double one = 1.0;
    CHECK(vm_init(NULL, &ctx));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, ROW, &row));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, ROW, &sums));
    CHECK(vm_write(ctx, row, 0, &one, sizeof one));
    /* sums = the row sums of ROW rows that are all `row`: 2^40 additions. */
    shape[0] = ROW;
    shape[1] = ROW;
    stride[0] = 0;
    stride[1] = 1;
    instr = vm_instr3(VM_OP_ADD_REDUCE, vm_operand_range(sums, 0, ROW),
                      vm_operand_view(vm_view_nd(row, 0, 2, shape, stride)), vm_operand_i64(1));
    CHECK(vm_submit(ctx, &instr, 1));
    it.ctx = ctx;
    it.done = 0;
    REQUIRE(pthread_create(&thread, NULL, interrupt_until_done, &it) == 0);
    EXPECT_ERROR("interrupted flush", VM_ERR_INTERRUPTED, "interrupted", vm_sync(ctx, sums));
    __atomic_store_n(&it.done, 1, __ATOMIC_SEQ_CST);
    REQUIRE(pthread_join(thread, NULL) == 0);
    still_works(ctx);
    printf("ok the context computes after an interrupt\n");
    CHECK(vm_shutdown(ctx));
}

/* out = (in + 1) * 2 over 2^22 elements (a kernel of many blocks on the cpu engine) with a
 * panic injected on `site`; then the same again, which must compute. */
static void panic_in_a_block(const char *site) {
    vm_context *ctx;
    vm_base in, tmp, out;
    vm_instruction instr;
    size_t nbytes;
    const double *x;
    const uint64_t n = UINT64_C(1) << 22;
    int status, round;
    REQUIRE(setenv("VM_INJECT_PANIC", site, 1) == 0);
    CHECK(vm_init(NULL, &ctx));
    REQUIRE(unsetenv("VM_INJECT_PANIC") == 0);
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, n, &in));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, n, &tmp));
    CHECK(vm_base_new(ctx, VM_DTYPE_F64, n, &out));
    for (round = 0; round < 2; round++) {
        instr = vm_instr3(VM_OP_ADD, vm_operand_range(tmp, 0, n), vm_operand_range(in, 0, n), vm_operand_f64(1.0));
        CHECK(vm_submit(ctx, &instr, 1));
        instr = vm_instr3(VM_OP_MULTIPLY, vm_operand_range(out, 0, n), vm_operand_range(tmp, 0, n), vm_operand_f64(2.0));
        CHECK(vm_submit(ctx, &instr, 1));
        status = vm_sync(ctx, out);
        if (round == 0) {
            fprintf(stderr, "  panic on the %s: %s: %s\n", site, vm_status_name(status), vm_last_error());
            REQUIRE(status == VM_OK || (status == VM_ERR_INTERNAL && strstr(vm_last_error(), "panic injected")));
        } else {
            CHECK(status);
        }
    }
    /* The second round ran whole: out = (0 + 1) * 2 everywhere. */
    x = NULL;
    CHECK(vm_data(ctx, out, (const void **)&x, &nbytes));
    REQUIRE(nbytes == n * sizeof(double) && x[0] == 2.0 && x[n / 2] == 2.0 && x[n - 1] == 2.0);
    still_works(ctx);
    printf("ok a panic on the %s leaves the context usable\n", site);
    CHECK(vm_shutdown(ctx));
}

int main(void) {
    interrupt_a_long_flush();
    panic_in_a_block("worker");
    panic_in_a_block("caller");
    printf("faults ok\n");
    return 0;
}
