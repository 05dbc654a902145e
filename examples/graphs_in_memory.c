/* graphs_in_memory.c - build a dataset from graphs held in memory (CSR
   arrays, the way most graph code stores them) instead of TU files, then
   use it like a loaded one: here, partition every graph into 2 parts.
   usage: graphs_in_memory */
#define HPJEPA_IMPLEMENTATION
#include "hpjepa.h"
#include <stdio.h>
#include <string.h>

enum { G = 60 }; /* graphs of 6..13 nodes: cycles (label 0) and stars (label 1) */

int main(void) {
    static int64_t node_ptr[G + 1], row_ptr[G * 13 + 1];
    static int32_t col[G * 13 * 2], label[G], part[13];
    hpj_csr_graphs in;
    hpj_dataset ds;
    int64_t v = 0, e = 0, cut = 0;
    int32_t g, i, n;
    /* one CSR over all graphs: node v's neighbours are col[row_ptr[v] ..
       row_ptr[v+1]-1], numbered within v's graph, each edge both ways */
    for (g = 0; g < G; ++g) {
        n = 6 + g % 8;
        label[g] = g % 2;
        for (i = 0; i < n; ++i, ++v) {
            if (label[g] == 0) { col[e++] = (i + n - 1) % n; col[e++] = (i + 1) % n; }
            else if (i == 0) { int32_t j; for (j = 1; j < n; ++j) col[e++] = j; }
            else col[e++] = 0;
            row_ptr[v + 1] = e;
        }
        node_ptr[g + 1] = v;
    }
    memset(&in, 0, sizeof in);
    in.num_graphs = G;
    in.node_ptr = node_ptr;  /* (G+1) graph g owns nodes node_ptr[g] .. node_ptr[g+1]-1 */
    in.row_ptr = row_ptr;    /* (N+1) */
    in.col = col;            /* (E) */
    in.graph_label = label;  /* (G) raw labels; or target (G, target_dim) for regression */
    if (hpj_dataset_from_csr(&in, "TOY", &ds) != HPJ_OK) {
        fprintf(stderr, "graphs_in_memory: %s\n", hpj_last_error());
        return 1;
    }
    for (g = 0; g < ds.num_graphs; ++g) { /* the dataset's graphs are CSR views, as after loading */
        hpj_graph gr = hpj_dataset_graph(&ds, g);
        int64_t c;
        if (hpj_partition(&gr, 2, NULL, NULL, part, &c) != HPJ_OK) {
            fprintf(stderr, "graphs_in_memory: %s\n", hpj_last_error());
            hpj_dataset_free(&ds);
            return 1;
        }
        cut += c;
    }
    printf("%s: %d graphs, %lld nodes, %lld undirected edges, %d classes; 2-way cuts sum to %lld edges\n", ds.name,
           ds.num_graphs, (long long)ds.num_nodes, (long long)(ds.num_edges / 2), ds.num_classes, (long long)cut);
    hpj_dataset_free(&ds);
    return 0;
}
