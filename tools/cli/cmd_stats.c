/* cmd_stats.c - `hpjepa stats`: a TU dataset's size, and load details on stderr. */
#include "cli.h"
#include <stdio.h>

static const char *stats_usage =
    "usage: hpjepa stats DATASET_DIR\n"
    "  Loads a TUDataset folder (e.g. data/PROTEINS holding PROTEINS_A.txt ...)\n"
    "  and prints: graphs=<int> classes=<int> avg_nodes=<float> avg_edges=<float>\n"
    "  avg_edges counts distinct undirected non-loop node pairs per graph;\n"
    "  classes is 0 for a regression dataset. Load details go to stderr.\n";

int cmd_stats(int argc, char **argv) {
    hpj_dataset ds;
    double t0, t1;
    if (argc >= 2 && cli_is_help(argv[1])) { fputs(stats_usage, stdout); return 0; }
    if (argc != 2) {
        cli_error("stats", "expected one DATASET_DIR argument, got %d (usage: hpjepa stats DATASET_DIR)", argc - 1);
        return 2;
    }
    if (argv[1][0] == '-') { cli_error("stats", "unknown option '%s' (see --help)", argv[1]); return 2; }
    t0 = cli_now();
    if (cli_load_dataset("stats", argv[1], &ds)) return 1;
    t1 = cli_now();
    printf("graphs=%d classes=%d avg_nodes=%.2f avg_edges=%.2f\n", ds.num_graphs, ds.num_classes,
           ds.num_graphs ? (double)ds.num_nodes / ds.num_graphs : 0.0,
           ds.num_graphs ? (double)ds.num_edges / 2.0 / ds.num_graphs : 0.0);
    fprintf(stderr, "%s: loaded in %.3f s; %lld nodes, %lld undirected edges", ds.name, t1 - t0,
            (long long)ds.num_nodes, (long long)(ds.num_edges / 2));
    if (ds.dup_lines) fprintf(stderr, ", %lld duplicate edge lines dropped", (long long)ds.dup_lines);
    if (ds.self_loops) fprintf(stderr, ", %lld self-loops dropped", (long long)ds.self_loops);
    if (ds.node_label) fprintf(stderr, ", node labels %d..%d", ds.node_label_min, ds.node_label_max);
    if (ds.edge_label) fprintf(stderr, ", edge labels %d..%d", ds.edge_label_min, ds.edge_label_max);
    if (ds.node_attr) fprintf(stderr, ", %d node attributes", ds.node_attr_dim);
    if (ds.edge_attr) fprintf(stderr, ", %d edge attributes", ds.edge_attr_dim);
    if (ds.target) fprintf(stderr, ", %d regression targets", ds.target_dim);
    if (ds.split) fprintf(stderr, ", split file");
    fputc('\n', stderr);
    hpj_dataset_free(&ds);
    return 0;
}
