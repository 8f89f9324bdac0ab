/*
 * c_engine: a small engine plugin for the vector VM, written against vm_component.h only.
 *
 * It runs element-wise add, subtract and multiply and the sum reduction on f64 arrays itself,
 * in plain loops, and hands every other instruction to its child (the next component of the
 * stack). It is the example of docs/plugins.md; build it with
 *
 *     cc -std=c11 -O2 -shared -fPIC -I bridge-c/include c_engine.c -o libc_engine.so
 *
 * and name it in a config:
 *
 *     [c_engine]
 *     library = "libc_engine.so"
 *     [stacks]
 *     plugin = ["node", "c_engine", "interp"]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm_component.h"

/* ---- The instance ---------------------------------------------------------------------------- */

typedef struct engine {
    int has_child;
    uint64_t min_elements; /* setting: smaller instructions go to the child */
    uint64_t ran;          /* instructions run here */
    uint64_t handed;       /* instructions handed to the child */
} engine;

static const vm_setting_spec SETTINGS[] = {
    {"min_elements", VM_SETTING_INTEGER, "0", "instructions over fewer elements are handed to the child", 0,
     (int64_t)1 << 40},
};

static void *create(const vm_setting *settings, size_t n, int has_child, vm_host *host, const vm_host_api *api) {
    engine *e = calloc(1, sizeof *e);
    if (!e) {
        api->fail(host, VM_ERR_OUT_OF_MEMORY, "c_engine: no memory for the instance");
        return NULL;
    }
    e->has_child = has_child;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(settings[i].key, "min_elements") == 0) {
            e->min_elements = strtoull(settings[i].value, NULL, 10);
        }
    }
    return e;
}

static void destroy(void *component) { free(component); }

static void describe(void *component, char *buf, size_t cap) {
    const engine *e = component;
    snprintf(buf, cap, "%llu instructions run here, %llu handed to the child", (unsigned long long)e->ran,
             (unsigned long long)e->handed);
}

/* ---- Walking views ------------------------------------------------------------------------- */

/* The number of elements a view visits. */
static uint64_t view_size(const vm_view *v) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

/* Advances the multi-index idx of a walk over shape (last dimension fastest). */
static void next_index(uint64_t *idx, const uint64_t *shape, uint32_t ndim) {
    for (uint32_t d = ndim; d-- > 0;) {
        if (++idx[d] < shape[d]) return;
        idx[d] = 0;
    }
}

/* The offset in its base of the element of v at multi-index idx. */
static int64_t offset_of(const vm_view *v, const uint64_t *idx) {
    int64_t at = v->start;
    for (uint32_t d = 0; d < v->ndim; d++) at += (int64_t)idx[d] * v->stride[d];
    return at;
}

/* Two views visit the same elements in the same order. */
static int same_view(const vm_view *a, const vm_view *b) {
    if (a->base != b->base || a->start != b->start || a->ndim != b->ndim) return 0;
    for (uint32_t d = 0; d < a->ndim; d++) {
        if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d]) return 0;
    }
    return 1;
}

/* ---- Talking to the child ------------------------------------------------------------------ */

/* Runs one system instruction (SYNC, DISCARD) on the view's base in the child. */
static int child_system(vm_host *host, const vm_host_api *api, uint32_t opcode, vm_base base) {
    vm_base_info info;
    int status = api->base_info(host, base, &info);
    if (status != VM_OK) return status;
    vm_instruction in = vm_instr1(opcode, vm_operand_range(base, 0, info.nelem));
    return api->child_execute(host, &in, 1);
}

/* Hands one instruction to the child, or fails when there is none. */
static int hand_down(engine *e, const vm_instruction *in, vm_host *host, const vm_host_api *api) {
    if (!e->has_child) {
        char msg[128];
        snprintf(msg, sizeof msg, "c_engine runs only f64 add, subtract, multiply and add_reduce; opcode %u needs a child",
                 (unsigned)in->opcode);
        return api->fail(host, VM_ERR_UNSUPPORTED, msg);
    }
    e->handed++;
    return api->child_execute(host, in, 1);
}

/* ---- What it runs itself ------------------------------------------------------------------- */

/* An f64 view operand: its base's data, or NULL (a constant, or another dtype). */
static double *f64_data(const vm_operand *o, vm_host *host, const vm_host_api *api, int *status) {
    vm_base_info info;
    void *data = NULL;
    if (o->kind != VM_OPERAND_VIEW) return NULL;
    *status = api->base_info(host, o->u.view.base, &info);
    if (*status != VM_OK || info.dtype != VM_DTYPE_F64) return NULL;
    *status = api->base_data(host, o->u.view.base, 1, &data);
    return *status == VM_OK ? data : NULL;
}

/* Whether this engine runs instruction in itself: f64 operands, no partial overlap of the output
 * with an input (those need the inputs read in full first: the child knows how). */
static int runs_here(const engine *e, const vm_instruction *in, vm_host *host, const vm_host_api *api) {
    int binary = in->opcode == VM_OP_ADD || in->opcode == VM_OP_SUBTRACT || in->opcode == VM_OP_MULTIPLY;
    int reduce = in->opcode == VM_OP_ADD_REDUCE;
    if (!binary && !reduce) return 0;
    const vm_view *out = &in->operands[0].u.view;
    if (view_size(out) < e->min_elements) return 0;
    uint32_t inputs = binary ? 2 : 1;
    for (uint32_t k = 0; k <= inputs; k++) {
        const vm_operand *o = &in->operands[k];
        if (o->kind == VM_OPERAND_CONSTANT) {
            if (o->u.constant.dtype != VM_DTYPE_F64) return 0;
            continue;
        }
        vm_base_info info;
        if (api->base_info(host, o->u.view.base, &info) != VM_OK || info.dtype != VM_DTYPE_F64) return 0;
        if (k > 0 && o->u.view.base == out->base && !(binary && same_view(&o->u.view, out))) return 0;
    }
    return 1;
}

/* out = a op b, element by element, over the output's shape (inputs have it too). */
static int elementwise(const vm_instruction *in, vm_host *host, const vm_host_api *api) {
    int status = VM_OK;
    const vm_operand *ops = in->operands;
    double *out = f64_data(&ops[0], host, api, &status);
    if (!out) return status;
    double *src[2] = {NULL, NULL};
    double constant[2] = {0.0, 0.0};
    for (int k = 0; k < 2; k++) {
        if (ops[k + 1].kind == VM_OPERAND_CONSTANT) {
            constant[k] = ops[k + 1].u.constant.value.f;
        } else if (!(src[k] = f64_data(&ops[k + 1], host, api, &status))) {
            return status;
        }
    }
    const vm_view *ov = &ops[0].u.view;
    uint64_t idx[VM_MAX_NDIM] = {0};
    uint64_t n = view_size(ov);
    for (uint64_t i = 0; i < n; i++) {
        double x[2];
        for (int k = 0; k < 2; k++) x[k] = src[k] ? src[k][offset_of(&ops[k + 1].u.view, idx)] : constant[k];
        double r = in->opcode == VM_OP_ADD ? x[0] + x[1] : in->opcode == VM_OP_SUBTRACT ? x[0] - x[1] : x[0] * x[1];
        out[offset_of(ov, idx)] = r;
        next_index(idx, ov->shape, ov->ndim);
    }
    return VM_OK;
}

/* out = the sum of a along axis, left to right (the reference engine's order and bits). */
static int add_reduce(const vm_instruction *in, vm_host *host, const vm_host_api *api) {
    int status = VM_OK;
    const vm_operand *ops = in->operands;
    double *out = f64_data(&ops[0], host, api, &status);
    if (!out) return status;
    double *a = f64_data(&ops[1], host, api, &status);
    if (!a) return status;
    const vm_view *ov = &ops[0].u.view, *av = &ops[1].u.view;
    uint32_t axis = (uint32_t)ops[2].u.constant.value.i;
    uint64_t len = av->shape[axis];
    uint64_t idx[VM_MAX_NDIM] = {0}, aidx[VM_MAX_NDIM] = {0};
    uint64_t n = view_size(ov);
    for (uint64_t i = 0; i < n; i++) {
        /* the input index: the output's, with the axis inserted */
        for (uint32_t d = 0, o = 0; d < av->ndim; d++) aidx[d] = d == axis ? 0 : idx[o++];
        double acc = 0.0;
        for (uint64_t k = 0; k < len; k++) {
            aidx[axis] = k;
            double x = a[offset_of(av, aidx)];
            acc = k == 0 ? x : acc + x;
        }
        out[offset_of(ov, idx)] = acc;
        next_index(idx, ov->shape, ov->ndim);
    }
    return VM_OK;
}

/* Runs one instruction here: the child first makes the host copies current (it may hold newer
 * data of a base it wrote), and afterwards drops its copies of the output. */
static int run_here(engine *e, const vm_instruction *in, vm_host *host, const vm_host_api *api) {
    uint32_t n = in->opcode == VM_OP_ADD_REDUCE ? 2 : 3;
    int status = VM_OK;
    for (uint32_t k = 0; k < n && e->has_child && status == VM_OK; k++) {
        if (in->operands[k].kind == VM_OPERAND_VIEW) {
            status = child_system(host, api, VM_OP_SYNC, in->operands[k].u.view.base);
        }
    }
    if (status != VM_OK) return status;
    status = in->opcode == VM_OP_ADD_REDUCE ? add_reduce(in, host, api) : elementwise(in, host, api);
    if (status == VM_OK && e->has_child) status = child_system(host, api, VM_OP_DISCARD, in->operands[0].u.view.base);
    e->ran++;
    return status;
}

static int execute(void *component, const vm_instruction *batch, size_t n, vm_host *host, const vm_host_api *api) {
    engine *e = component;
    for (size_t i = 0; i < n; i++) {
        const vm_instruction *in = &batch[i];
        int status;
        switch (in->opcode) {
        case VM_OP_NONE:
            status = VM_OK;
            break;
        case VM_OP_SYNC:
        case VM_OP_DISCARD:
        case VM_OP_FREE:
            /* The child keeps copies of its own: it hears about every system instruction. Without
             * one, the host memory is all there is. */
            if (e->has_child) {
                status = api->child_execute(host, in, 1);
            } else if (in->opcode == VM_OP_FREE) {
                api->base_free(host, in->operands[0].u.view.base);
                status = VM_OK;
            } else {
                void *data;
                status = in->opcode == VM_OP_SYNC ? api->base_data(host, in->operands[0].u.view.base, 1, &data) : VM_OK;
            }
            break;
        default:
            status = runs_here(e, in, host, api) ? run_here(e, in, host, api) : hand_down(e, in, host, api);
        }
        if (status != VM_OK) return status;
    }
    return VM_OK;
}

static const vm_component_api API = {
    VM_COMPONENT_ABI_VERSION,
    "c_engine",
    "f64 add, subtract, multiply and add_reduce in plain C loops; the rest in its child",
    SETTINGS,
    sizeof SETTINGS / sizeof SETTINGS[0],
    0,
    create,
    execute,
    NULL, /* register_extension: the child answers */
    NULL, /* reduction_order: sequential */
    describe,
    destroy,
};

const vm_component_api *vm_component_entry(void) { return &API; }
