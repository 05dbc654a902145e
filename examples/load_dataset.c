/* load_dataset.c - read a TUDataset folder and summarise it.
   usage: load_dataset DATASET_DIR   (e.g. data/DEMO) */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>

int main(int argc, char **argv) {
    hpj_dataset ds;
    int32_t g, biggest = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s DATASET_DIR\n", argv[0]);
        return 2;
    }
    if (hpj_dataset_load_tu(argv[1], &ds) != HPJ_OK) {
        fprintf(stderr, "%s\n", hpj_last_error()); /* e.g. "X_A.txt:12: node id 0 ..." */
        return 1;
    }
    for (g = 0; g < ds.num_graphs; ++g) { /* each graph is a CSR view */
        hpj_graph gr = hpj_dataset_graph(&ds, g);
        if (gr.n > hpj_dataset_graph(&ds, biggest).n) biggest = g;
    }
    printf("%s: %d graphs, %lld nodes, %lld undirected edges, %d classes\n", ds.name, ds.num_graphs,
           (long long)ds.num_nodes, (long long)(ds.num_edges / 2), ds.num_classes);
    printf("largest graph: #%d with %d nodes\n", biggest, hpj_dataset_graph(&ds, biggest).n);
    if (ds.node_label) printf("node labels %d..%d\n", ds.node_label_min, ds.node_label_max);
    hpj_dataset_free(&ds);
    return 0;
}
