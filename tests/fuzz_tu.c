/* libFuzzer harness of the TUDataset reader (hpj_dataset_parse_tu).
   Built by the Makefile with clang
   -fsanitize=fuzzer,address,undefined; make test runs it for seconds on
   tests/fuzz-corpus/ and fresh seeds, make fuzz for minutes.

   Input layout: two bytes little-endian = which of the 9 files are present
   (bit f = hpj_tu_file f: A, graph_indicator, graph_labels,
   graph_attributes, node_labels, node_attributes, edge_labels,
   edge_attributes, split), then the texts of the present files in that
   order, separated by the byte 0x1F (a missing text is empty).
   tests/fuzz.sh writes seeds in this layout from small valid datasets.

   Besides "no crash, no leak, no undefined behaviour, no hang", it checks
   the reader's contract and traps when it is broken:
   - success: every per-graph CSR view passes hpj_graph_check, the
     pointers add up, labels lie in their reported ranges, classes are
     0..C-1 over ascending raw values, and a second parse is identical;
   - failure: a failure status, a zeroed dataset, and a one-line reason
     that starts with the file it is about ("F_A.txt:3: ..."). */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>
#include <string.h>

#define FUZZ_TAG "fuzz_tu"
#include "fuzz.h"

static int same_bytes(const void *a, const void *b, size_t n) {
    if ((a == NULL) != (b == NULL)) return 0;
    return a == NULL || n == 0 || memcmp(a, b, n) == 0;
}

static void check_dataset(const hpj_dataset *ds, const hpj_tu_text *t) {
    int32_t g;
    int64_t i;
    FUZZ_ASSERT(strcmp(ds->name, "F") == 0);
    FUZZ_ASSERT(ds->num_graphs >= 1 && ds->num_nodes >= ds->num_graphs);
    FUZZ_ASSERT(ds->node_ptr[0] == 0 && ds->node_ptr[ds->num_graphs] == ds->num_nodes);
    FUZZ_ASSERT(ds->edge_ptr[0] == 0 && ds->edge_ptr[ds->num_graphs] == ds->num_edges);
    FUZZ_ASSERT(ds->num_edges % 2 == 0 && ds->self_loops >= 0 && ds->dup_lines >= 0);
    for (g = 0; g < ds->num_graphs; ++g) {
        hpj_graph gr = hpj_dataset_graph(ds, g);
        FUZZ_ASSERT(gr.n >= 1);
        FUZZ_ASSERT(hpj_graph_check(&gr) == HPJ_OK);
    }
    FUZZ_ASSERT((ds->edge_label != NULL) == (t->text[HPJ_TU_EDGE_LABELS] != NULL));
    FUZZ_ASSERT((ds->node_label != NULL) == (t->text[HPJ_TU_NODE_LABELS] != NULL));
    FUZZ_ASSERT((ds->node_attr != NULL) == (t->text[HPJ_TU_NODE_ATTRIBUTES] != NULL));
    FUZZ_ASSERT((ds->edge_attr != NULL) == (t->text[HPJ_TU_EDGE_ATTRIBUTES] != NULL));
    FUZZ_ASSERT((ds->graph_label != NULL) == (t->text[HPJ_TU_GRAPH_LABELS] != NULL));
    FUZZ_ASSERT((ds->target != NULL) == (t->text[HPJ_TU_GRAPH_ATTRIBUTES] != NULL));
    FUZZ_ASSERT((ds->split != NULL) == (t->text[HPJ_TU_SPLIT] != NULL));
    if (ds->edge_label)
        for (i = 0; i < ds->num_edges; ++i)
            FUZZ_ASSERT(ds->edge_label[i] >= ds->edge_label_min && ds->edge_label[i] <= ds->edge_label_max);
    if (ds->node_label)
        for (i = 0; i < ds->num_nodes; ++i)
            FUZZ_ASSERT(ds->node_label[i] >= ds->node_label_min && ds->node_label[i] <= ds->node_label_max);
    if (ds->node_attr)
        for (i = 0; i < ds->num_nodes * ds->node_attr_dim; ++i) FUZZ_ASSERT(ds->node_attr[i] == ds->node_attr[i]);
    if (ds->edge_attr)
        for (i = 0; i < ds->num_edges * ds->edge_attr_dim; ++i) FUZZ_ASSERT(ds->edge_attr[i] == ds->edge_attr[i]);
    if (ds->graph_label) {
        FUZZ_ASSERT(ds->num_classes >= 1 && ds->num_classes <= ds->num_graphs);
        for (g = 0; g < ds->num_graphs; ++g) FUZZ_ASSERT(ds->graph_label[g] >= 0 && ds->graph_label[g] < ds->num_classes);
        for (g = 1; g < ds->num_classes; ++g) FUZZ_ASSERT(ds->class_value[g - 1] < ds->class_value[g]);
    } else {
        FUZZ_ASSERT(ds->num_classes == 0 && ds->class_value == NULL);
    }
    if (ds->split)
        for (g = 0; g < ds->num_graphs; ++g) FUZZ_ASSERT(ds->split[g] >= 0 && ds->split[g] <= 2);
}

static void same_dataset(const hpj_dataset *a, const hpj_dataset *b) {
    size_t N = (size_t)a->num_nodes, E = (size_t)a->num_edges, G = (size_t)a->num_graphs;
    FUZZ_ASSERT(a->num_graphs == b->num_graphs && a->num_nodes == b->num_nodes && a->num_edges == b->num_edges);
    FUZZ_ASSERT(a->self_loops == b->self_loops && a->dup_lines == b->dup_lines);
    FUZZ_ASSERT(a->node_attr_dim == b->node_attr_dim && a->edge_attr_dim == b->edge_attr_dim);
    FUZZ_ASSERT(a->target_dim == b->target_dim && a->num_classes == b->num_classes);
    FUZZ_ASSERT(same_bytes(a->node_ptr, b->node_ptr, 8 * (G + 1)) && same_bytes(a->edge_ptr, b->edge_ptr, 8 * (G + 1)));
    FUZZ_ASSERT(same_bytes(a->rowptr, b->rowptr, 4 * (N + G)) && same_bytes(a->col, b->col, 4 * E));
    FUZZ_ASSERT(same_bytes(a->node_label, b->node_label, 4 * N) && same_bytes(a->edge_label, b->edge_label, 4 * E));
    FUZZ_ASSERT(same_bytes(a->node_attr, b->node_attr, 4 * N * (size_t)a->node_attr_dim));
    FUZZ_ASSERT(same_bytes(a->edge_attr, b->edge_attr, 4 * E * (size_t)a->edge_attr_dim));
    FUZZ_ASSERT(same_bytes(a->graph_label, b->graph_label, 4 * G));
    FUZZ_ASSERT(same_bytes(a->class_value, b->class_value, 4 * (size_t)a->num_classes));
    FUZZ_ASSERT(same_bytes(a->target, b->target, 4 * G * (size_t)a->target_dim));
    FUZZ_ASSERT(same_bytes(a->split, b->split, G));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hpj_tu_text t;
    hpj_dataset ds, again;
    hpj_status st;
    unsigned mask;
    const char *p, *end;
    int f;
    if (size < 2) return 0;
    mask = (unsigned)data[0] | ((unsigned)data[1] << 8);
    memset(&t, 0, sizeof t);
    t.name = "F";
    p = (const char *)data + 2;
    end = (const char *)data + size;
    for (f = 0; f < HPJ_TU_NUM_FILES; ++f) {
        const char *q;
        if (!(mask & (1u << f))) continue;
        q = p;
        while (q < end && *q != '\x1f') ++q;
        t.text[f] = p; /* never NULL: an empty text is a present, empty file */
        t.len[f] = (size_t)(q - p);
        p = q < end ? q + 1 : end;
    }
    hpj_clear_error();
    st = hpj_dataset_parse_tu(&t, &ds);
    if (st != HPJ_OK) {
        const char *e = hpj_last_error();
        FUZZ_ASSERT(st == HPJ_ERR_FORMAT || st == HPJ_ERR_INPUT || st == HPJ_ERR_NOMEM);
        fuzz_check_reason("F");
        if (st != HPJ_ERR_NOMEM) FUZZ_ASSERT(strncmp(e, "F_", 2) == 0 && strstr(e, ".txt") != NULL);
        FUZZ_ASSERT(all_zero(&ds, sizeof ds));
        return 0;
    }
    check_dataset(&ds, &t);
    st = hpj_dataset_parse_tu(&t, &again);
    FUZZ_ASSERT(st == HPJ_OK || st == HPJ_ERR_NOMEM);
    if (st == HPJ_OK) {
        same_dataset(&ds, &again);
        hpj_dataset_free(&again);
    }
    hpj_dataset_free(&ds);
    FUZZ_ASSERT(all_zero(&ds, sizeof ds));
    return 0;
}
