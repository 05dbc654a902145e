/* cmd_plot.c - `hpjepa plot`: self-contained SVG figures of the analyses
   (accuracy by node-count quartile, resolution-bank sweeps, exact t-SNE of
   graph embeddings, pretraining loss curves) plus Markdown tables on stdout.
   One small SVG toolkit (escaped text, 1-2-5 ticks, axes, legends, grouped
   bars) serves all four kinds. Every figure is built in memory and written
   to PATH.tmp~ then renamed, so a failure never leaves a partial file. */
#include "cli.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#define PLOT_STR(x) #x
#define PLOT_OMP(x) _Pragma(PLOT_STR(omp x))
#else
#define PLOT_OMP(x)
#endif

#define CMD "plot"
#define MAX_INPUTS 64

/* Okabe-Ito, ordered so the low-contrast yellow comes late. */
static const char *const palette[8] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                       "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
/* Quartiles are ordinal: light blue -> blue -> orange -> vermillion stays
   distinguishable under the common colour-vision deficiencies. */
static const char *const quartile_colour[4] = {"#56B4E9", "#0072B2", "#E69F00", "#D55E00"};
/* Classes and target quartiles sit beside the node-count quartiles in the
   t-SNE figure, so they take colours of their own: a class coloured like a
   quartile would read as that quartile. Classes: Paul Tol's muted scheme
   without its cyan and rose (near the quartiles' sky blue and vermillion)
   first; target quartiles: ColorBrewer's purple-green, ordinal too. */
static const char *const class_colour[8] = {"#117733", "#AA4499", "#332288", "#999933",
                                            "#882255", "#44AA99", "#DDCC77", "#CC6677"};
static const char *const target_quartile_colour[4] = {"#7B3294", "#C2A5CF", "#A6DBA0", "#008837"};

/* ==== utilities: files, lines, numbers ==================================== */

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The whole file, NUL-terminated; NULL with a printed reason. */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f) { cli_error(CMD, "%s: cannot open (%s)", path, strerror(errno)); return NULL; }
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
        fclose(f);
        cli_error(CMD, "%s: cannot read", path);
        return NULL;
    }
    buf = (char *)malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        cli_error(CMD, "%s: %s", path, buf ? "read failed" : "out of memory");
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static char *trim(char *s) {
    char *e;
    while (*s == ' ' || *s == '\t') ++s;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
    return s;
}

typedef struct line_reader { char *p, *end; int line; } line_reader;

static void lines_init(line_reader *r, char *buf, size_t len) {
    r->p = buf;
    r->end = buf + len;
    r->line = 0;
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) r->p += 3; /* UTF-8 byte-order mark */
}

/* The next non-blank line, trimmed, NUL-terminated in place; NULL at the end. */
static char *next_line(line_reader *r) {
    while (r->p < r->end) {
        char *s = r->p, *e = (char *)memchr(s, '\n', (size_t)(r->end - s));
        if (!e) e = r->end;
        r->p = e < r->end ? e + 1 : r->end;
        r->line++;
        *e = 0; /* at r->end this is slurp's terminator */
        s = trim(s);
        if (*s) return s;
    }
    return NULL;
}

/* Splits at commas in place; returns the number of fields (may exceed max). */
static int split_csv(char *s, char **f, int max) {
    int n = 0;
    for (;;) {
        char *c = strchr(s, ',');
        if (c) *c = 0;
        if (n < max) f[n] = trim(s);
        ++n;
        if (!c) return n;
        s = c + 1;
    }
}

static int to_ll(const char *s, long long lo, long long hi, long long *v) {
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return end != s && !*end && errno != ERANGE && *v >= lo && *v <= hi;
}

static int to_dbl(const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && !*end && errno != ERANGE && isfinite(*v);
}

static double mean_std(const double *x, int n, double *sd) { /* population std, numpy's default */
    double m = 0, s = 0;
    int i;
    for (i = 0; i < n; ++i) m += x[i];
    m = n ? m / n : 0.0;
    for (i = 0; i < n; ++i) s += (x[i] - m) * (x[i] - m);
    *sd = n ? sqrt(s / n) : 0.0;
    return m;
}

/* ==== quartiles of a per-graph quantity ==================================== */

typedef struct quartiles {
    double edge[3];      /* 25 / 50 / 75 % points, numpy's linear interpolation */
    double lo[4], hi[4]; /* smallest and largest value in each bin             */
    int count[4];        /* values in each bin                                  */
} quartiles;

/* Q1 = v <= q25, Q2 = q25 < v <= q50, Q3 = q50 < v <= q75, Q4 = v > q75. */
static int quartile_of(const quartiles *q, double v) {
    return v <= q->edge[0] ? 0 : v <= q->edge[1] ? 1 : v <= q->edge[2] ? 2 : 3;
}

static int quartiles_compute(const double *v, int n, quartiles *q) {
    double *s = (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int i, k;
    if (!s) { cli_error(CMD, "out of memory"); return -1; }
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cli_cmp_double);
    for (k = 0; k < 3; ++k) {
        double pos = (k + 1) * 0.25 * (n - 1);
        int i0 = (int)floor(pos);
        double fr = pos - i0;
        q->edge[k] = i0 + 1 < n ? s[i0] + fr * (s[i0 + 1] - s[i0]) : s[i0];
    }
    for (k = 0; k < 4; ++k) { q->count[k] = 0; q->lo[k] = HUGE_VAL; q->hi[k] = -HUGE_VAL; }
    for (i = 0; i < n; ++i) {
        k = quartile_of(q, s[i]);
        q->count[k]++;
        if (s[i] < q->lo[k]) q->lo[k] = s[i];
        if (s[i] > q->hi[k]) q->hi[k] = s[i];
    }
    free(s);
    return 0;
}

/* "4-12" (integers) or "0.12 to 3.4"; "none" for an empty bin. */
static void quartile_range(const quartiles *q, int k, int integer, char *buf, size_t cap) {
    if (!q->count[k]) snprintf(buf, cap, "none");
    else if (q->lo[k] == q->hi[k]) snprintf(buf, cap, integer ? "%.0f" : "%.3g", q->lo[k]);
    else snprintf(buf, cap, integer ? "%.0f-%.0f" : "%.3g to %.3g", q->lo[k], q->hi[k]);
}

/* "Q1 (4-12 nodes)", "Q2 (1 node)", "Q3 (no graphs)"; unit NULL for a
   real-valued quantity: "Q1 (-3.01 to -0.8)". */
static void quartile_name(const quartiles *q, int k, const char *unit, char *buf, size_t cap) {
    char range[64];
    quartile_range(q, k, unit != NULL, range, sizeof range);
    if (!q->count[k]) snprintf(buf, cap, "Q%d (no graphs)", k + 1);
    else if (!unit) snprintf(buf, cap, "Q%d (%s)", k + 1, range);
    else snprintf(buf, cap, "Q%d (%s %s%s)", k + 1, range, unit, q->lo[k] == 1 && q->hi[k] == 1 ? "" : "s");
}

/* ==== SVG toolkit =========================================================== */

typedef struct sbuf { char *p; size_t len, cap; int oom; } sbuf;

static void sb_vprintf(sbuf *b, const char *fmt, va_list ap) {
    va_list cp;
    int n;
    if (b->oom) return;
    va_copy(cp, ap);
    n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, cp);
    va_end(cp);
    if (n < 0) { b->oom = 1; return; }
    if (!b->p || b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        char *p;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        p = (char *)realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    }
    b->len += (size_t)n;
}

static void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

/* Length of the well-formed UTF-8 sequence at u that XML allows (no
   overlong forms, surrogates, U+FFFE/U+FFFF or beyond U+10FFFF), else 0. */
static int utf8_len(const unsigned char *u) {
    static const unsigned long min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    int k, len = *u < 0x80 ? 1 : (*u >> 5) == 6 ? 2 : (*u >> 4) == 14 ? 3 : (*u >> 3) == 30 ? 4 : 0;
    unsigned long cp = len == 1 ? *u : len ? *u & (0x7F >> len) : 0;
    for (k = 1; k < len; ++k) {
        if ((u[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (u[k] & 0x3F);
    }
    if (len > 1 && (cp < min_cp[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF || cp > 0x10FFFF)) return 0;
    return len;
}

/* Text from files and labels: XML-escaped; control characters and bytes
   that are not well-formed UTF-8 become '?', so the SVG always parses. */
static void sb_escape(sbuf *b, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        int len = utf8_len(u);
        if (*u == '&') sb_printf(b, "&amp;");
        else if (*u == '<') sb_printf(b, "&lt;");
        else if (*u == '>') sb_printf(b, "&gt;");
        else if (*u == '"') sb_printf(b, "&quot;");
        else if (len == 0 || (*u < 0x20 && *u != '\t')) { sb_printf(b, "?"); len = 1; }
        else sb_printf(b, "%.*s", len, (const char *)u);
        u += len;
    }
}

/* Rough width of a label in sans-serif at `size` px (UTF-8 aware), for layout. */
static double text_w(const char *s, double size) {
    int n = 0;
    for (; *s; ++s) n += ((unsigned char)*s & 0xC0) != 0x80;
    return 0.6 * size * n;
}

/* <text>; the content is printf-formatted, then escaped. attrs are trusted. */
static void svg_text(sbuf *b, double x, double y, double size, const char *anchor, const char *attrs, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;
static void svg_text(sbuf *b, double x, double y, double size, const char *anchor, const char *attrs, const char *fmt, ...) {
    char s[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" text-anchor=\"%s\"%s>", x, y, size, anchor, attrs ? attrs : "");
    sb_escape(b, s);
    sb_printf(b, "</text>\n");
}

static void svg_line(sbuf *b, double xa, double ya, double xb, double yb, const char *colour, double width) {
    sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%g\"/>\n", xa, ya, xb, yb,
              colour, width);
}

/* Document header, white background and the centred bold title. The
   figure has its natural size (a page never blows it up) and scales down
   with its viewBox to a narrower window or column (never cut). */
static void svg_begin(sbuf *b, double w, double h, const char *title) {
    double size = 17;
    while (size > 10 && text_w(title, size) > w - 20) size -= 1;
    sb_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
                 "viewBox=\"0 0 %.0f %.0f\" style=\"max-width: 100%%; height: auto\" font-family=\"sans-serif\">\n<title>",
              w, h, w, h);
    sb_escape(b, title);
    sb_printf(b, "</title>\n<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", w, h);
    svg_text(b, w / 2, 28, size, "middle", " font-weight=\"bold\"", "%s", title);
}

/* Closes the document and writes it to path via path.tmp~ + rename. */
static int svg_finish(sbuf *b, const char *path) {
    char tmp[4200];
    FILE *f;
    sb_printf(b, "</svg>\n");
    if (b->oom) { cli_error(CMD, "out of memory"); return -1; }
    if (!(f = cli_create(CMD, path, tmp, sizeof tmp))) return -1;
    return cli_commit(CMD, f, fwrite(b->p, 1, b->len, f) != b->len, tmp, path);
}

/* ---- axes ------------------------------------------------------------------ */

/* A value range mapped to pixels [p0, p1]; linear with 1-2-5 x 10^k ticks,
   or log10 with ticks at 1(,2,5) x 10^k. */
typedef struct plot_axis { double lo, hi, p0, p1, step; int log; } plot_axis;

static double nice_step(double span, int target) {
    double raw = span / target, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

/* Linear axis over [lo, hi] widened to whole ticks; min_step bounds the
   step from below (1 for integer quantities such as epochs). */
static void axis_linear(plot_axis *a, double lo, double hi, int target, double min_step, int widen) {
    double pad;
    if (!(hi > lo)) {
        pad = lo != 0 ? fabs(lo) * 0.1 : 1.0;
        if (min_step > pad) pad = min_step;
        lo -= pad;
        hi += pad;
    }
    a->step = nice_step(hi - lo, target);
    if (a->step < min_step) a->step = min_step;
    a->lo = widen ? floor(lo / a->step + 1e-9) * a->step : lo;
    a->hi = widen ? ceil(hi / a->step - 1e-9) * a->step : hi;
    a->log = 0;
}

/* Log axis: bounds snapped to the 1-2-5 ticks (only decades past 3 decades). */
static void axis_log(plot_axis *a, double lo, double hi) {
    double e0 = floor(log10(lo)), e1 = ceil(log10(hi)), m;
    int dense = e1 - e0 <= 3, k;
    static const double mult[3] = {1, 2, 5};
    a->log = 1;
    a->step = 0;
    a->lo = pow(10.0, e0);
    a->hi = pow(10.0, e1);
    for (m = e0; m <= e1; ++m)
        for (k = 0; k < (dense ? 3 : 1); ++k) {
            double t = mult[k] * pow(10.0, m);
            if (t <= lo * (1 + 1e-12) && t > a->lo) a->lo = t;
            if (t >= hi * (1 - 1e-12) && t < a->hi) a->hi = t;
        }
}

static double ax_px(const plot_axis *a, double v) {
    double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
    return a->p0 + t * (a->p1 - a->p0);
}

/* Tick values inside the axis range; returns the count. */
static int ax_ticks(const plot_axis *a, double *t, int max) {
    int n = 0;
    if (a->log) {
        double e, e0 = floor(log10(a->lo) + 1e-9), e1 = ceil(log10(a->hi) - 1e-9);
        int dense = e1 - e0 <= 3, k;
        static const double mult[3] = {1, 2, 5};
        for (e = e0; e <= e1 && n < max; ++e)
            for (k = 0; k < (dense ? 3 : 1) && n < max; ++k) {
                double v = mult[k] * pow(10.0, e);
                if (v >= a->lo * (1 - 1e-9) && v <= a->hi * (1 + 1e-9)) t[n++] = v;
            }
    } else {
        long long k, k0 = (long long)ceil(a->lo / a->step - 1e-9), k1 = (long long)floor(a->hi / a->step + 1e-9);
        for (k = k0; k <= k1 && n < max; ++k) t[n++] = (double)k * a->step;
    }
    return n;
}

static void fmt_tick(const plot_axis *a, double v, char *buf, size_t cap) {
    int dec = 0;
    if (a->log || fabs(v) >= 1e6) { snprintf(buf, cap, "%g", v); return; }
    if (fabs(v) < a->step * 1e-6) v = 0; /* no "-0.0" */
    while (dec < 8 && a->step * pow(10.0, dec) - floor(a->step * pow(10.0, dec) + 1e-9) > 1e-6) ++dec;
    snprintf(buf, cap, "%.*f", dec, v);
}

/* The plot area of one panel with its two axes. */
typedef struct plot_frame { double x, y, w, h; plot_axis ax, ay; } plot_frame;

static void frame_place(plot_frame *f, double x, double y, double w, double h) {
    f->x = x;
    f->y = y;
    f->w = w;
    f->h = h;
    f->ax.p0 = x;
    f->ax.p1 = x + w;
    f->ay.p0 = y + h;
    f->ay.p1 = y;
}

/* Light grid, axis lines, ticks with labels, axis titles. A categorical x
   axis (xticks = 0) gets only its line; the caller labels the groups. */
static void draw_frame(sbuf *b, const plot_frame *f, int xticks, const char *xlabel, const char *ylabel) {
    double t[64], widest = 0;
    char s[64];
    int n, i;
    n = ax_ticks(&f->ay, t, 64);
    for (i = 0; i < n; ++i) {
        double py = ax_px(&f->ay, t[i]);
        fmt_tick(&f->ay, t[i], s, sizeof s);
        if (text_w(s, 11) > widest) widest = text_w(s, 11);
        svg_line(b, f->x, py, f->x + f->w, py, "#e5e5e5", 1);
        svg_line(b, f->x - 5, py, f->x, py, "#333333", 1);
        svg_text(b, f->x - 8, py + 4, 11, "end", NULL, "%s", s);
    }
    if (xticks) {
        n = ax_ticks(&f->ax, t, 64);
        for (i = 0; i < n; ++i) {
            double px = ax_px(&f->ax, t[i]);
            fmt_tick(&f->ax, t[i], s, sizeof s);
            svg_line(b, px, f->y, px, f->y + f->h, "#e5e5e5", 1);
            svg_line(b, px, f->y + f->h, px, f->y + f->h + 5, "#333333", 1);
            svg_text(b, px, f->y + f->h + 18, 11, "middle", NULL, "%s", s);
        }
    }
    svg_line(b, f->x, f->y, f->x, f->y + f->h, "#333333", 1.2);
    svg_line(b, f->x, f->y + f->h, f->x + f->w, f->y + f->h, "#333333", 1.2);
    if (xlabel && *xlabel) svg_text(b, f->x + f->w / 2, f->y + f->h + 38, 13, "middle", NULL, "%s", xlabel);
    if (ylabel && *ylabel) {
        char rot[96];
        double lx = f->x - widest - 18, ly = f->y + f->h / 2;
        snprintf(rot, sizeof rot, " transform=\"rotate(-90 %.1f %.1f)\"", lx, ly);
        svg_text(b, lx, ly, 13, "middle", rot, "%s", ylabel);
    }
}

/* ---- legend ------------------------------------------------------------------ */

typedef enum legend_kind { LEGEND_BOX, LEGEND_LINE, LEGEND_DOT } legend_kind;

static double legend_width(const char *const *labels, int n) {
    double w = 0;
    int i;
    for (i = 0; i < n; ++i)
        if (text_w(labels[i], 12) > w) w = text_w(labels[i], 12);
    return w + 30;
}

/* A vertical legend with its top-left corner at (x, y). */
static void draw_legend(sbuf *b, double x, double y, int n, const char *const *labels, const char *const *colours,
                        legend_kind kind) {
    int i;
    for (i = 0; i < n; ++i) {
        double cy = y + 9 + 20 * i;
        if (kind == LEGEND_BOX)
            sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\" stroke=\"#333333\" stroke-width=\"0.5\"/>\n",
                      x, cy - 7, colours[i]);
        else if (kind == LEGEND_LINE) {
            svg_line(b, x, cy, x + 18, cy, colours[i], 2.2);
            sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.8\" fill=\"%s\"/>\n", x + 9, cy, colours[i]);
        } else
            sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>\n", x + 7, cy, colours[i]);
        svg_text(b, x + 24, cy + 4, 12, "start", NULL, "%s", labels[i]);
    }
}

/* The legend in columns under a panel `width` px wide, filled down then
   across: as many columns as fit (at least one). Returns its height. */
static double draw_legend_grid(sbuf *b, double x, double y, double width, int n, const char *const *labels,
                               const char *const *colours, legend_kind kind) {
    double colw = legend_width(labels, n) + 12;
    int cols = (int)((width + 12) / colw), rows, c;
    if (cols < 1) cols = 1;
    if (cols > n) cols = n;
    rows = n ? (n + cols - 1) / cols : 0;
    for (c = 0; c * rows < n; ++c) {
        int k = n - c * rows < rows ? n - c * rows : rows;
        draw_legend(b, x + c * colw, y, k, labels + c * rows, colours + c * rows, kind);
    }
    return 20.0 * rows;
}

/* ---- grouped bar chart (quartiles, sweep) ------------------------------------- */

typedef struct bar_chart {
    int ngroups, nseries;
    const char *const *group;     /* (ngroups) label under each group               */
    const char *const *group_sub; /* (ngroups) a second, grey line, or NULL          */
    const char *const *series;    /* (nseries) legend entries, or NULL for none      */
    const double *value, *err;    /* (ngroups, nseries); NaN = no bar; err <= 0 none */
    const int *mark;              /* (ngroups, nseries) 1 appends '*' to the value   */
    int unit;                     /* y axis fixed at 0..1 (accuracy)                 */
    const char *ylabel, *footnote;
} bar_chart;

static void fmt_value(double v, int unit, char *buf, size_t cap) {
    if (unit || (fabs(v) >= 0.1 && fabs(v) < 1000)) snprintf(buf, cap, "%.3f", v);
    else snprintf(buf, cap, "%.3g", v);
}

static void draw_bar_chart(sbuf *b, const char *title, const bar_chart *c) {
    int g, s, rotate = 0;
    double bar_w = c->nseries > 1 ? 40 : 64, group_w, top = 0, label_w = 0, head, legend_w, W, H;
    const char *colours[MAX_INPUTS];
    plot_frame f;
    char v[64];
    group_w = c->nseries * bar_w + 28;
    for (g = 0; g < c->ngroups; ++g) {
        if (text_w(c->group[g], 12) + 14 > group_w) group_w = text_w(c->group[g], 12) + 14;
        if (c->group_sub && text_w(c->group_sub[g], 11) + 14 > group_w) group_w = text_w(c->group_sub[g], 11) + 14;
    }
    for (s = 0; s < c->nseries; ++s) colours[s] = palette[c->nseries > 1 ? s % 8 : 0];
    for (g = 0; g < c->ngroups * c->nseries; ++g) {
        double e = c->err[g] > 0 ? c->err[g] : 0;
        if (isnan(c->value[g])) continue;
        if (c->value[g] + e > top) top = c->value[g] + e;
        fmt_value(c->value[g], c->unit, v, sizeof v);
        if (c->mark && c->mark[g]) strcat(v, "*");
        if (text_w(v, 10) + 1 > label_w) label_w = text_w(v, 10) + 1;
    }
    rotate = label_w > bar_w - 4; /* value labels that do not fit across a bar stand upright */
    head = rotate ? 48 + label_w : 64;
    legend_w = c->series ? legend_width(c->series, c->nseries) + 24 : 0;
    frame_place(&f, 84, head, c->ngroups * group_w < 360 ? 360 : c->ngroups * group_w, 300);
    W = f.x + f.w + legend_w + 24;
    H = f.y + f.h + 46 + (c->footnote ? 24 : 0) + 8;
    if (text_w(title, 17) + 40 > W) W = text_w(title, 17) + 40;
    if (c->footnote && text_w(c->footnote, 11) + 24 > W) W = text_w(c->footnote, 11) + 24;
    svg_begin(b, W, H, title);
    f.ax.lo = 0;
    f.ax.hi = 1;
    f.ax.log = 0;
    f.ax.step = 1;
    if (c->unit) axis_linear(&f.ay, 0, 1, 5, 0, 1);
    else axis_linear(&f.ay, 0, top > 0 ? top * 1.05 : 1, 5, 0, 1);
    draw_frame(b, &f, 0, NULL, c->ylabel);
    group_w = f.w / c->ngroups;
    for (g = 0; g < c->ngroups; ++g) {
        double cx = f.x + (g + 0.5) * group_w;
        for (s = 0; s < c->nseries; ++s) {
            int k = g * c->nseries + s;
            double val = c->value[k], e = c->err[k] > 0 ? c->err[k] : 0, x0, py, ptop, base = ax_px(&f.ay, 0);
            if (isnan(val)) continue;
            x0 = cx - c->nseries * bar_w / 2 + s * bar_w;
            py = ax_px(&f.ay, val < f.ay.hi ? val : f.ay.hi);
            sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"#333333\" stroke-width=\"0.5\"/>\n",
                      x0 + 3, py, bar_w - 6, base - py, colours[s]);
            ptop = py;
            if (e > 0) {
                double ya = ax_px(&f.ay, val - e > 0 ? val - e : 0), yb = ax_px(&f.ay, val + e < f.ay.hi ? val + e : f.ay.hi);
                double xm = x0 + bar_w / 2;
                svg_line(b, xm, ya, xm, yb, "#222222", 1.2);
                svg_line(b, xm - 5, ya, xm + 5, ya, "#222222", 1.2);
                svg_line(b, xm - 5, yb, xm + 5, yb, "#222222", 1.2);
                ptop = yb;
            }
            fmt_value(val, c->unit, v, sizeof v);
            if (c->mark && c->mark[k]) strcat(v, "*");
            if (rotate) {
                char rot[96];
                snprintf(rot, sizeof rot, " transform=\"rotate(-90 %.1f %.1f)\"", x0 + bar_w / 2 + 3.5, ptop - 4);
                svg_text(b, x0 + bar_w / 2 + 3.5, ptop - 4, 10, "start", rot, "%s", v);
            } else svg_text(b, x0 + bar_w / 2, ptop - 4, 10, "middle", NULL, "%s", v);
        }
        svg_text(b, cx, f.y + f.h + 18, 12, "middle", NULL, "%s", c->group[g]);
        if (c->group_sub) svg_text(b, cx, f.y + f.h + 33, 11, "middle", " fill=\"#555555\"", "%s", c->group_sub[g]);
    }
    if (c->series) draw_legend(b, f.x + f.w + 20, f.y, c->nseries, c->series, colours, LEGEND_BOX);
    if (c->footnote) svg_text(b, 12, H - 12, 11, "start", " fill=\"#555555\"", "%s", c->footnote);
}

/* ==== options shared by the kinds ============================================== */

typedef struct plot_opts {
    const char *out, *title;
    const char *pos[MAX_INPUTS];
    int npos;
    double perplexity;
    long long iters, seed, threads;
} plot_opts;

/* Returns 0 to go on, 1 after --help (exit 0), 2 on a usage error. */
static int parse_opts(int argc, char **argv, const char *usage, int tsne, plot_opts *o) {
    int i;
    memset(o, 0, sizeof *o);
    o->perplexity = 30;
    o->iters = 1000;
    o->seed = 1;
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (cli_is_help(a)) { fputs(usage, stdout); return 1; }
        if (!strcmp(a, "--out") && has) o->out = argv[++i];
        else if (!strcmp(a, "--title") && has) o->title = argv[++i];
        else if (tsne && !strcmp(a, "--perplexity") && has) {
            if (cli_parse_double(CMD, "--perplexity", argv[++i], &o->perplexity)) return 2;
            if (o->perplexity < 1) { cli_error(CMD, "--perplexity must be at least 1"); return 2; }
        } else if (tsne && !strcmp(a, "--iters") && has) {
            if (cli_parse_int(CMD, "--iters", argv[++i], 1, 100000, &o->iters)) return 2;
        } else if (tsne && !strcmp(a, "--seed") && has) {
            if (cli_parse_int(CMD, "--seed", argv[++i], 0, (long long)1 << 62, &o->seed)) return 2;
        } else if (tsne && !strcmp(a, "--threads") && has) {
            if (cli_parse_int(CMD, "--threads", argv[++i], 1, 4096, &o->threads)) return 2;
        } else if (a[0] == '-' && a[1]) {
            static const char *const valued[6] = {"--out", "--title", "--perplexity", "--iters", "--seed", "--threads"};
            int k, known = 0;
            for (k = 0; k < (tsne ? 6 : 2); ++k) known |= !strcmp(a, valued[k]);
            cli_error(CMD, "%s '%s' (see hpjepa plot %s --help)", known ? "missing value for" : "unknown option", a, argv[0]);
            return 2;
        } else if (o->npos < MAX_INPUTS) o->pos[o->npos++] = a;
        else { cli_error(CMD, "more than %d inputs", MAX_INPUTS); return 2; }
    }
    if (!o->out) { cli_error(CMD, "missing --out FILE.svg (see hpjepa plot %s --help)", argv[0]); return 2; }
    if (cli_check_writable(CMD, o->out)) return 2; /* before reading inputs (t-SNE takes minutes) */
    return 0;
}

/* LABEL=FILE -> label (copied) and path; a bare FILE is labelled by its
   name without `ext`. Labels may hold '=' ("K=2,4=run.json") and so may
   paths: the split is the rightmost '=' whose right side exists; failing
   that an existing arg is a bare FILE, else the last '=' splits. Returns
   -1 on an empty label or file. */
static int label_file(const char *arg, const char *ext, char *label, size_t cap, const char **path) {
    const char *eq = strrchr(arg, '='), *from = arg, *e;
    size_t n;
    for (e = eq; e && e > arg; --e)
        if (*e == '=' && access(e + 1, F_OK) == 0) break;
    if (e && e > arg) eq = e;
    else if (access(arg, F_OK) == 0) eq = NULL;
    if (eq) {
        n = (size_t)(eq - arg);
        *path = eq + 1;
    } else {
        size_t le = strlen(ext);
        from = base_name(arg);
        n = strlen(from);
        if (n > le && !strcmp(from + n - le, ext)) n -= le;
        *path = arg;
    }
    if (n == 0 || !**path) { cli_error(CMD, "'%s': expected LABEL=FILE", arg); return -1; }
    if (n >= cap) n = cap - 1;
    memcpy(label, from, n);
    label[n] = 0;
    return 0;
}

/* Markdown cells must not break the table. */
static void md_cell(const char *s) {
    for (; *s; ++s) {
        if (*s == '|') fputs("\\|", stdout);
        else if (*s == '\n') fputc(' ', stdout);
        else fputc(*s, stdout);
    }
}

/* ==== plot quartiles ============================================================== */

static const char *quartiles_usage =
    "usage: hpjepa plot quartiles --out F.svg [--title T] LABEL=FILE.graphs.csv [LABEL=FILE.graphs.csv ...]\n"
    "  Accuracy (or MAE for regression files) per node-count quartile, one bar\n"
    "  per method, from the per-graph files of `hpjepa eval --report PREFIX`\n"
    "  (PREFIX.graphs.csv). Quartile edges are the 25/50/75 % points of the node\n"
    "  counts of all graphs (numpy's linear interpolation); Q1 = n <= q25,\n"
    "  Q2 = q25 < n <= q50, Q3 = q50 < n <= q75, Q4 = n > q75. A bar is the mean\n"
    "  over seeds of the per-seed score in that quartile; the error bar is the\n"
    "  std across seeds (when there are several). All files must hold the same\n"
    "  graphs. A bare FILE is labelled by its name. Prints a Markdown table.\n";

static const char *const qhead_cls = "seed,fold,graph,nodes,edges,label,pred,correct";
static const char *const qhead_reg = "seed,fold,graph,nodes,edges,target,pred,abs_err";

typedef struct qrow { long long seed, graph; int nodes, line; double val; } qrow;

typedef struct qfile {
    char label[128];
    const char *path;
    int regression, n, nseeds, ngraphs;
    qrow *rows;        /* (n) sorted by (graph, seed)           */
    long long *seeds;  /* (nseeds) ascending                     */
    long long *gid;    /* (ngraphs) ascending graph ids          */
    int *gnodes;       /* (ngraphs) node count of each graph     */
} qfile;

static void qfile_free(qfile *q) {
    free(q->rows);
    free(q->seeds);
    free(q->gid);
    free(q->gnodes);
}

static int cmp_qrow(const void *a, const void *b) {
    const qrow *x = (const qrow *)a, *y = (const qrow *)b;
    if (x->graph != y->graph) return x->graph < y->graph ? -1 : 1;
    if (x->seed != y->seed) return x->seed < y->seed ? -1 : 1;
    return 0;
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Reads and checks one graphs.csv: header, 8 fields per row, each graph
   once per seed, every seed covering every graph, fixed node counts. */
static int qfile_load(qfile *q) {
    static const char *const names[8] = {"seed", "fold", "graph", "nodes", "edges", "", "", ""};
    size_t len;
    char *buf = slurp(q->path, &len), *s, *f[8];
    line_reader r;
    int cap = 0, i, rc = -1;
    if (!buf) return -1;
    lines_init(&r, buf, len);
    s = next_line(&r);
    if (!s) { cli_error(CMD, "%s:1: empty file (expected the header '%s')", q->path, qhead_cls); goto done; }
    if (!strcmp(s, qhead_cls)) q->regression = 0;
    else if (!strcmp(s, qhead_reg)) q->regression = 1;
    else {
        cli_error(CMD, "%s:%d: expected the header '%s' (or '%s' for regression)", q->path, r.line, qhead_cls, qhead_reg);
        goto done;
    }
    while ((s = next_line(&r))) {
        long long v[8];
        double d[3];
        int nf = split_csv(s, f, 8), k;
        if (nf != 8) { cli_error(CMD, "%s:%d: expected 8 comma-separated fields, got %d", q->path, r.line, nf); goto done; }
        for (k = 0; k < 5; ++k)
            if (!to_ll(f[k], 0, k == 4 ? (long long)1 << 62 : 2147483647, &v[k])) {
                cli_error(CMD, "%s:%d: %s '%s' is not an integer >= 0", q->path, r.line, names[k], f[k]);
                goto done;
            }
        if (!q->regression) {
            for (k = 5; k < 8; ++k)
                if (!to_ll(f[k], k == 7 ? 0 : -2147483647, k == 7 ? 1 : 2147483647, &v[k])) {
                    cli_error(CMD, "%s:%d: %s '%s' is not %s", q->path, r.line, k == 5 ? "label" : k == 6 ? "pred" : "correct",
                              f[k], k == 7 ? "0 or 1" : "an integer");
                    goto done;
                }
            if (v[7] != (v[5] == v[6])) {
                cli_error(CMD, "%s:%d: correct is %lld but label %lld %s pred %lld", q->path, r.line, v[7], v[5],
                          v[5] == v[6] ? "==" : "!=", v[6]);
                goto done;
            }
            d[2] = (double)v[7];
        } else {
            for (k = 5; k < 8; ++k)
                if (!to_dbl(f[k], &d[k - 5]) || (k == 7 && d[2] < 0)) {
                    cli_error(CMD, "%s:%d: %s '%s' is not a finite number%s", q->path, r.line,
                              k == 5 ? "target" : k == 6 ? "pred" : "abs_err", f[k], k == 7 ? " >= 0" : "");
                    goto done;
                }
        }
        if (q->n == cap) {
            qrow *nr;
            cap = cap ? cap * 2 : 1024;
            nr = (qrow *)realloc(q->rows, sizeof(qrow) * (size_t)cap);
            if (!nr) { cli_error(CMD, "out of memory"); goto done; }
            q->rows = nr;
        }
        q->rows[q->n].seed = v[0];
        q->rows[q->n].graph = v[2];
        q->rows[q->n].nodes = (int)v[3];
        q->rows[q->n].line = r.line;
        q->rows[q->n].val = d[2];
        q->n++;
    }
    if (!q->n) { cli_error(CMD, "%s: no rows after the header", q->path); goto done; }
    qsort(q->rows, (size_t)q->n, sizeof(qrow), cmp_qrow);
    q->seeds = (long long *)malloc(sizeof(long long) * (size_t)q->n);
    q->gid = (long long *)malloc(sizeof(long long) * (size_t)q->n);
    q->gnodes = (int *)malloc(sizeof(int) * (size_t)q->n);
    if (!q->seeds || !q->gid || !q->gnodes) { cli_error(CMD, "out of memory"); goto done; }
    for (i = 0; i < q->n; ++i) q->seeds[i] = q->rows[i].seed;
    qsort(q->seeds, (size_t)q->n, sizeof(long long), cmp_ll);
    for (i = 0; i < q->n; ++i)
        if (!q->nseeds || q->seeds[q->nseeds - 1] != q->seeds[i]) q->seeds[q->nseeds++] = q->seeds[i];
    for (i = 0; i < q->n;) {
        int j = i;
        const qrow *a = &q->rows[i];
        for (; j < q->n && q->rows[j].graph == a->graph; ++j) {
            const qrow *c = &q->rows[j];
            if (j > i && c->seed == q->rows[j - 1].seed) {
                const qrow *p = &q->rows[j - 1];
                cli_error(CMD, "%s:%d: graph %lld appears twice for seed %lld (also line %d)", q->path,
                          c->line > p->line ? c->line : p->line, c->graph, c->seed, c->line > p->line ? p->line : c->line);
                goto done;
            }
            if (c->nodes != a->nodes) {
                cli_error(CMD, "%s:%d: graph %lld has %d nodes here but %d on line %d", q->path, c->line, c->graph, c->nodes,
                          a->nodes, a->line);
                goto done;
            }
        }
        if (j - i != q->nseeds) {
            cli_error(CMD, "%s:%d: graph %lld has rows for %d of the %d seeds", q->path, a->line, a->graph, j - i, q->nseeds);
            goto done;
        }
        q->gid[q->ngraphs] = a->graph;
        q->gnodes[q->ngraphs++] = a->nodes;
        i = j;
    }
    rc = 0;
done:
    free(buf);
    return rc;
}

/* Same graphs with the same node counts as the reference file. */
static int qfile_same_graphs(const qfile *q, const qfile *ref) {
    int i;
    if (q->regression != ref->regression) {
        cli_error(CMD, "%s: a %s file cannot share a plot with the %s file %s", q->path,
                  q->regression ? "regression" : "classification", ref->regression ? "regression" : "classification", ref->path);
        return -1;
    }
    if (q->ngraphs != ref->ngraphs) {
        cli_error(CMD, "%s: describes %d graphs but %s describes %d", q->path, q->ngraphs, ref->path, ref->ngraphs);
        return -1;
    }
    for (i = 0; i < q->ngraphs; ++i) {
        if (q->gid[i] != ref->gid[i]) {
            cli_error(CMD, "%s: graph %lld is not in %s", q->path, q->gid[i] < ref->gid[i] ? q->gid[i] : ref->gid[i],
                      q->gid[i] < ref->gid[i] ? ref->path : q->path);
            return -1;
        }
        if (q->gnodes[i] != ref->gnodes[i]) {
            cli_error(CMD, "%s: graph %lld has %d nodes but %d in %s", q->path, q->gid[i], q->gnodes[i], ref->gnodes[i], ref->path);
            return -1;
        }
    }
    return 0;
}

static int cmd_plot_quartiles(int argc, char **argv) {
    plot_opts o;
    qfile *qf = NULL;
    quartiles qs;
    double *nodes = NULL, *mean = NULL, *sd = NULL, *per_seed = NULL;
    char group[4][96], sub[4][64], title[512], foot[256];
    const char *gp[4], *sp[4], *series[MAX_INPUTS];
    int i, k, rc = parse_opts(argc, argv, quartiles_usage, 0, &o), nm, max_seeds = 1;
    if (rc) return rc == 1 ? 0 : 2;
    if (!o.npos) { cli_error(CMD, "quartiles: expected at least one LABEL=FILE.graphs.csv"); return 2; }
    nm = o.npos;
    qf = (qfile *)calloc((size_t)nm, sizeof(qfile));
    if (!qf) { cli_error(CMD, "out of memory"); return 1; }
    for (i = 0; i < nm; ++i)
        if (label_file(o.pos[i], ".graphs.csv", qf[i].label, sizeof qf[i].label, &qf[i].path)) { rc = 2; goto done; }
    rc = 1;
    for (i = 0; i < nm; ++i) {
        if (qfile_load(&qf[i])) goto done;
        if (i && qfile_same_graphs(&qf[i], &qf[0])) goto done;
        if (qf[i].nseeds > max_seeds) max_seeds = qf[i].nseeds;
    }
    nodes = (double *)malloc(sizeof(double) * (size_t)qf[0].ngraphs);
    mean = (double *)malloc(sizeof(double) * 4 * (size_t)nm);
    sd = (double *)malloc(sizeof(double) * 4 * (size_t)nm);
    per_seed = (double *)malloc(sizeof(double) * 9 * (size_t)max_seeds);
    if (!nodes || !mean || !sd || !per_seed) { cli_error(CMD, "out of memory"); goto done; }
    for (i = 0; i < qf[0].ngraphs; ++i) nodes[i] = qf[0].gnodes[i];
    if (quartiles_compute(nodes, qf[0].ngraphs, &qs)) goto done;
    for (i = 0; i < nm; ++i) {
        const qfile *q = &qf[i];
        double *sum = per_seed, *cnt = per_seed + 4 * q->nseeds, *score = per_seed + 8 * q->nseeds;
        int r, m;
        memset(per_seed, 0, sizeof(double) * 8 * (size_t)q->nseeds);
        for (r = 0; r < q->n; ++r) {
            const long long *hit = (const long long *)bsearch(&q->rows[r].seed, q->seeds, (size_t)q->nseeds, sizeof(long long), cmp_ll);
            int si = (int)(hit - q->seeds);
            k = quartile_of(&qs, q->rows[r].nodes);
            sum[si * 4 + k] += q->rows[r].val;
            cnt[si * 4 + k] += 1;
        }
        for (k = 0; k < 4; ++k) {
            if (!qs.count[k]) { mean[k * nm + i] = sd[k * nm + i] = NAN; continue; }
            /* every seed covers every graph, so cnt > 0 for a non-empty bin */
            for (m = 0; m < q->nseeds; ++m) score[m] = sum[m * 4 + k] / cnt[m * 4 + k];
            mean[k * nm + i] = mean_std(score, q->nseeds, &sd[k * nm + i]);
        }
    }
    /* the figure */
    for (k = 0; k < 4; ++k) {
        quartile_name(&qs, k, "node", group[k], sizeof group[k]);
        snprintf(sub[k], sizeof sub[k], "%d graph%s", qs.count[k], qs.count[k] == 1 ? "" : "s");
        gp[k] = group[k];
        sp[k] = sub[k];
    }
    for (i = 0; i < nm; ++i) series[i] = qf[i].label;
    snprintf(title, sizeof title, "%s", o.title ? o.title : qf[0].regression ? "Test MAE by node-count quartile" : "Test accuracy by node-count quartile");
    {
        int all1 = 1, allmany = 1;
        for (i = 0; i < nm; ++i) { all1 &= qf[i].nseeds == 1; allmany &= qf[i].nseeds > 1; }
        snprintf(foot, sizeof foot, "Quartile edges %g / %g / %g nodes over %d graphs. %s", qs.edge[0], qs.edge[1], qs.edge[2],
                 qf[0].ngraphs,
                 all1 ? "One seed: no error bars." : allmany ? "Bars: mean over seeds; error bars: std across seeds."
                                                      : "Bars: mean over seeds; error bars: std across seeds (where > 1 seed).");
    }
    {
        bar_chart c;
        sbuf b = {0};
        memset(&c, 0, sizeof c);
        c.ngroups = 4;
        c.nseries = nm;
        c.group = gp;
        c.group_sub = sp;
        c.series = series;
        c.value = mean;
        c.err = sd;
        c.unit = !qf[0].regression;
        c.ylabel = qf[0].regression ? "test MAE (lower is better)" : "test accuracy";
        c.footnote = foot;
        draw_bar_chart(&b, title, &c);
        rc = svg_finish(&b, o.out) ? 1 : 0;
        free(b.p);
    }
    if (!rc) { /* the Markdown table, once the figure is in place */
        printf("| quartile | nodes | graphs |");
        for (i = 0; i < nm; ++i) { putchar(' '); md_cell(qf[i].label); printf(" |"); }
        printf("\n|---|---|---|");
        for (i = 0; i < nm; ++i) printf("---|");
        putchar('\n');
        for (k = 0; k < 4; ++k) {
            char range[64];
            quartile_range(&qs, k, 1, range, sizeof range);
            printf("| Q%d | %s | %d |", k + 1, range, qs.count[k]);
            for (i = 0; i < nm; ++i) {
                if (isnan(mean[k * nm + i])) printf(" - |");
                else if (qf[i].nseeds > 1) printf(" %.4f +- %.4f |", mean[k * nm + i], sd[k * nm + i]);
                else printf(" %.4f |", mean[k * nm + i]);
            }
            putchar('\n');
        }
    }
done:
    if (qf)
        for (i = 0; i < nm; ++i) qfile_free(&qf[i]);
    free(qf);
    free(nodes);
    free(mean);
    free(sd);
    free(per_seed);
    return rc;
}

/* ==== plot sweep ================================================================== */

static const char *sweep_usage =
    "usage: hpjepa plot sweep --out F.svg [--title T] LABEL=REPORT.json [LABEL=REPORT.json ...]\n"
    "  Resolution-bank sweep: one bar per report of `hpjepa eval --report PREFIX`\n"
    "  (PREFIX.json), height = the mean score; error bar = std across seeds when\n"
    "  the report has several seeds, else the std across the folds of its single\n"
    "  seed (marked * and said in the footnote). Reports of one dataset give one\n"
    "  bar per label; several datasets give one group per dataset with a bar per\n"
    "  label. All reports must share the metric (accuracy or mae). A bare FILE is\n"
    "  labelled by its name. Prints a Markdown table.\n";

typedef struct sweep_item {
    char label[128], dataset[128], metric[128];
    const char *path;
    double mean, std, fold_std, seeds;
    int have; /* bit per key found */
} sweep_item;

enum { SW_DATASET = 1, SW_METRIC = 2, SW_MEAN = 4, SW_STD = 8, SW_FOLD_STD = 16, SW_SEEDS = 32 };

typedef struct json_scan { const char *path, *s, *p; } json_scan;

static int json_line(const json_scan *j) {
    const char *q;
    int n = 1;
    for (q = j->s; q < j->p; ++q) n += *q == '\n';
    return n;
}

static void json_ws(json_scan *j) {
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') j->p++;
}

/* A string at j->p into out (escapes decoded; \uXXXX becomes '?'). */
static int json_string(json_scan *j, char *out, size_t cap) {
    size_t n = 0;
    if (*j->p != '"') return -1;
    for (j->p++; *j->p && *j->p != '"'; j->p++) {
        char c = *j->p;
        if (c == '\\') {
            c = *++j->p;
            if (!c) return -1;
            if (c == 'n' || c == 't' || c == 'r' || c == 'b' || c == 'f') c = ' ';
            else if (c == 'u') {
                int k;
                for (k = 0; k < 4; ++k) {
                    if (!j->p[1]) return -1;
                    j->p++;
                }
                c = '?';
            }
        }
        if (n + 1 < cap) out[n++] = c;
    }
    if (*j->p != '"') return -1;
    j->p++;
    if (cap) out[n] = 0;
    return 0;
}

/* Skips any value (nested objects and arrays, strings with escapes). */
static int json_skip(json_scan *j) {
    int depth = 0;
    do {
        json_ws(j);
        if (*j->p == '"') {
            if (json_string(j, NULL, 0)) return -1;
        } else if (*j->p == '{' || *j->p == '[') {
            ++depth;
            j->p++;
        } else if (*j->p == '}' || *j->p == ']') {
            if (--depth < 0) return -1;
            j->p++;
        } else if (*j->p == ',' || *j->p == ':') {
            if (!depth) return -1;
            j->p++;
        } else if (*j->p) {
            const char *q = j->p;
            while (*j->p && !strchr(" \t\r\n,:]}{[\"", *j->p)) j->p++;
            if (j->p == q) return -1;
        } else return -1;
    } while (depth > 0);
    return 0;
}

/* The keys we need from the top-level object; everything else is skipped. */
static int sweep_load(sweep_item *it) {
    static const char *const keys[6] = {"dataset", "metric", "mean", "std", "fold_std", "seeds"};
    size_t len;
    char *buf = slurp(it->path, &len), key[64], sval[128];
    json_scan j;
    int rc = -1, k;
    if (!buf) return -1;
    j.path = it->path;
    j.s = j.p = buf;
    if (strlen(buf) != len) { cli_error(CMD, "%s: not a text file (NUL byte)", it->path); goto done; }
    json_ws(&j);
    if (*j.p != '{') { cli_error(CMD, "%s:%d: expected a JSON object", it->path, json_line(&j)); goto done; }
    j.p++;
    json_ws(&j);
    while (*j.p != '}') {
        if (json_string(&j, key, sizeof key)) { cli_error(CMD, "%s:%d: expected a quoted key", it->path, json_line(&j)); goto done; }
        json_ws(&j);
        if (*j.p != ':') { cli_error(CMD, "%s:%d: expected ':' after \"%s\"", it->path, json_line(&j), key); goto done; }
        j.p++;
        json_ws(&j);
        for (k = 0; k < 6 && strcmp(key, keys[k]); ++k) {}
        if (k < 2) {
            if (json_string(&j, sval, sizeof sval)) {
                cli_error(CMD, "%s:%d: \"%s\" must be a string", it->path, json_line(&j), key);
                goto done;
            }
            memcpy(k ? it->metric : it->dataset, sval, sizeof sval); /* all three are 128 bytes */
            it->have |= 1 << k;
        } else if (k < 6) {
            double *dst[4] = {&it->mean, &it->std, &it->fold_std, &it->seeds};
            char *end;
            errno = 0;
            *dst[k - 2] = strtod(j.p, &end);
            if (end == j.p || errno == ERANGE || !isfinite(*dst[k - 2])) {
                cli_error(CMD, "%s:%d: \"%s\" must be a number", it->path, json_line(&j), key);
                goto done;
            }
            j.p = end;
            it->have |= 1 << k;
        } else if (json_skip(&j)) {
            cli_error(CMD, "%s:%d: malformed value of \"%s\"", it->path, json_line(&j), key);
            goto done;
        }
        json_ws(&j);
        if (*j.p == ',') {
            j.p++;
            json_ws(&j);
        } else if (*j.p != '}') {
            cli_error(CMD, "%s:%d: expected ',' or '}' after \"%s\"", it->path, json_line(&j), key);
            goto done;
        }
    }
    for (k = 0; k < 6; ++k)
        if (!(it->have & (1 << k)) && !(k == 4 && (it->have & SW_SEEDS) && it->seeds > 1)) {
            cli_error(CMD, "%s: no \"%s\" key (is this a report of hpjepa eval --report?)", it->path, keys[k]);
            goto done;
        }
    if (strcmp(it->metric, "accuracy") && strcmp(it->metric, "mae")) {
        cli_error(CMD, "%s: metric \"%s\" is neither accuracy nor mae", it->path, it->metric);
        goto done;
    }
    if (it->seeds < 1 || it->seeds > 1e6 || it->seeds != floor(it->seeds) || it->std < 0 || it->fold_std < 0 || it->mean < 0 ||
        (!strcmp(it->metric, "accuracy") && it->mean > 1)) {
        cli_error(CMD, "%s: expected seeds a whole number >= 1, std and fold_std >= 0, mean >= 0 (<= 1 for accuracy)", it->path);
        goto done;
    }
    rc = 0;
done:
    free(buf);
    return rc;
}

static int cmd_plot_sweep(int argc, char **argv) {
    plot_opts o;
    sweep_item *it = NULL;
    const char *dsets[MAX_INPUTS], *labels[MAX_INPUTS];
    double *val = NULL, *err = NULL;
    int *mark = NULL, i, g, s, nd = 0, nl = 0, n, unit, any_fold = 0, any_seed = 0;
    char title[512], foot[256];
    int rc = parse_opts(argc, argv, sweep_usage, 0, &o);
    if (rc) return rc == 1 ? 0 : 2;
    if (!o.npos) { cli_error(CMD, "sweep: expected at least one LABEL=REPORT.json"); return 2; }
    n = o.npos;
    it = (sweep_item *)calloc((size_t)n, sizeof(sweep_item));
    val = (double *)malloc(sizeof(double) * (size_t)n * n);
    err = (double *)malloc(sizeof(double) * (size_t)n * n);
    mark = (int *)calloc((size_t)n * n, sizeof(int));
    if (!it || !val || !err || !mark) { cli_error(CMD, "out of memory"); rc = 1; goto done; }
    for (i = 0; i < n; ++i)
        if (label_file(o.pos[i], ".json", it[i].label, sizeof it[i].label, &it[i].path)) { rc = 2; goto done; }
    rc = 1;
    for (i = 0; i < n; ++i) {
        if (sweep_load(&it[i])) goto done;
        if (strcmp(it[i].metric, it[0].metric)) {
            cli_error(CMD, "%s: metric %s differs from %s in %s", it[i].path, it[i].metric, it[0].metric, it[0].path);
            goto done;
        }
        for (g = 0; g < nd && strcmp(dsets[g], it[i].dataset); ++g) {}
        if (g == nd) dsets[nd++] = it[i].dataset;
        for (s = 0; s < nl && strcmp(labels[s], it[i].label); ++s) {}
        if (s == nl) labels[nl++] = it[i].label;
    }
    unit = !strcmp(it[0].metric, "accuracy");
    /* one dataset: a bar per label; several: groups = datasets, series = labels */
    for (i = 0; i < n * n; ++i) val[i] = err[i] = NAN;
    for (i = 0; i < n; ++i) {
        int k;
        for (g = 0; strcmp(dsets[g], it[i].dataset); ++g) {}
        for (s = 0; strcmp(labels[s], it[i].label); ++s) {}
        k = nd == 1 ? s : g * nl + s;
        if (!isnan(val[k])) {
            cli_error(CMD, "%s: label '%s' on %s is given twice", it[i].path, it[i].label, it[i].dataset);
            goto done;
        }
        val[k] = it[i].mean;
        err[k] = it[i].seeds > 1 ? it[i].std : it[i].fold_std;
        mark[k] = it[i].seeds <= 1;
        any_fold |= mark[k];
        any_seed |= !mark[k];
    }
    if (!any_seed) memset(mark, 0, sizeof(int) * (size_t)n * n); /* uniform case: said once in the footnote */
    if (o.title) snprintf(title, sizeof title, "%s", o.title);
    else if (nd == 1) snprintf(title, sizeof title, "Resolution-bank sweep on %s", dsets[0]);
    else snprintf(title, sizeof title, "Resolution-bank sweep");
    snprintf(foot, sizeof foot, "%s",
             !any_fold ? "Error bars: std across seeds."
             : !any_seed ? "Error bars: std across the folds of the single seed."
                         : "Error bars: std across seeds; * = one seed, std across its folds.");
    {
        bar_chart c;
        sbuf b = {0};
        memset(&c, 0, sizeof c);
        c.ngroups = nd == 1 ? nl : nd;
        c.nseries = nd == 1 ? 1 : nl;
        c.group = nd == 1 ? labels : dsets;
        c.series = nd == 1 ? NULL : labels;
        c.value = val;
        c.err = err;
        c.mark = mark;
        c.unit = unit;
        c.ylabel = unit ? "accuracy" : "MAE (lower is better)";
        c.footnote = foot;
        draw_bar_chart(&b, title, &c);
        rc = svg_finish(&b, o.out) ? 1 : 0;
        free(b.p);
    }
    if (!rc) {
        printf("| label | dataset | %s | std | fold_std | seeds |\n|---|---|---|---|---|---|\n", it[0].metric);
        for (i = 0; i < n; ++i) {
            printf("| ");
            md_cell(it[i].label);
            printf(" | ");
            md_cell(it[i].dataset);
            printf(" | %.4f | %.4f | %.4f | %.0f |\n", it[i].mean, it[i].std, it[i].fold_std, it[i].seeds);
        }
    }
done:
    free(it);
    free(val);
    free(err);
    free(mark);
    return rc;
}

/* ==== plot loss =================================================================== */

static const char *loss_usage =
    "usage: hpjepa plot loss --out F.svg [--title T] LABEL=LOG.csv [LABEL=LOG.csv ...]\n"
    "  Pretraining loss per resolution from `hpjepa pretrain --loss-log FILE`\n"
    "  (header epoch,step,resolution,K,loss, or P for K from a Graph-JEPA-mode\n"
    "  run; one row per epoch and level). One line per resolution (legend\n"
    "  K = ... parts, or P = ... patches), x = epoch. Several files give one\n"
    "  panel per file side by side (up to 2 per row, titled by their LABEL; a\n"
    "  bare LOG.csv is labelled by its name) sharing the y axis, so the panels\n"
    "  compare directly. The y axis is log10 when the largest loss is more than\n"
    "  20x the smallest (the axis says so). Prints a Markdown table of the first\n"
    "  and last loss per resolution.\n";

#define LOSS_MAX_RES 64

typedef struct loss_pt { double epoch, loss; int line; } loss_pt;
typedef struct loss_curve { int K, n, cap, first_line; loss_pt *pt; } loss_curve;
typedef struct loss_file {
    const char *path;
    char label[256];
    int named;       /* the label was given (LABEL=LOG.csv) */
    char level;      /* 'K' (parts of an HP-JEPA resolution) or 'P' (Graph-JEPA mode's patches) */
    loss_curve c[LOSS_MAX_RES];
    int max_epoch;
} loss_file;

static int cmp_loss_pt(const void *a, const void *b) {
    const loss_pt *x = (const loss_pt *)a, *y = (const loss_pt *)b;
    return (x->epoch > y->epoch) - (x->epoch < y->epoch);
}

static int loss_load(loss_file *lf) {
    static const char *const names[4] = {"epoch", "step", "resolution", "K"};
    static const long long hi[4] = {1000000000, (long long)1 << 62, LOSS_MAX_RES, 1000000000};
    size_t len;
    char *buf = slurp(lf->path, &len), *s, *f[5];
    line_reader r;
    int rc = -1, l, rows = 0;
    if (!buf) return -1;
    lines_init(&r, buf, len);
    s = next_line(&r);
    if (!s || (strcmp(s, "epoch,step,resolution,K,loss") && strcmp(s, "epoch,step,resolution,P,loss"))) {
        cli_error(CMD, "%s:%d: expected the header 'epoch,step,resolution,K,loss' (or P for K)", lf->path, s ? r.line : 1);
        goto done;
    }
    lf->level = s[22]; /* the K or the P */
    while ((s = next_line(&r))) {
        long long v[4];
        double loss;
        loss_curve *c;
        int nf = split_csv(s, f, 5), k;
        if (nf != 5) { cli_error(CMD, "%s:%d: expected 5 comma-separated fields, got %d", lf->path, r.line, nf); goto done; }
        for (k = 0; k < 4; ++k)
            if (!to_ll(f[k], k == 1 ? 0 : 1, hi[k], &v[k])) {
                cli_error(CMD, "%s:%d: %s '%s' is not an integer in %d..%lld", lf->path, r.line,
                          k == 3 && lf->level == 'P' ? "P" : names[k], f[k], k == 1 ? 0 : 1, hi[k]);
                goto done;
            }
        if (!to_dbl(f[4], &loss) || loss < 0) {
            cli_error(CMD, "%s:%d: loss '%s' is not a finite number >= 0", lf->path, r.line, f[4]);
            goto done;
        }
        c = &lf->c[v[2] - 1];
        if (c->n && c->K != v[3]) {
            cli_error(CMD, "%s:%d: resolution %lld has %c = %lld here but %d on line %d", lf->path, r.line, v[2], lf->level, v[3],
                      c->K, c->first_line);
            goto done;
        }
        if (c->n == c->cap) {
            loss_pt *np;
            c->cap = c->cap ? c->cap * 2 : 64;
            np = (loss_pt *)realloc(c->pt, sizeof(loss_pt) * (size_t)c->cap);
            if (!np) { cli_error(CMD, "out of memory"); goto done; }
            c->pt = np;
        }
        if (!c->n) { c->K = (int)v[3]; c->first_line = r.line; }
        c->pt[c->n].epoch = (double)v[0];
        c->pt[c->n].loss = loss;
        c->pt[c->n].line = r.line;
        c->n++;
        if (v[0] > lf->max_epoch) lf->max_epoch = (int)v[0];
        ++rows;
    }
    if (!rows) { cli_error(CMD, "%s: no rows after the header", lf->path); goto done; }
    for (l = 0; l < LOSS_MAX_RES; ++l) {
        loss_curve *c = &lf->c[l];
        int i;
        if (c->n > 1) qsort(c->pt, (size_t)c->n, sizeof(loss_pt), cmp_loss_pt); /* pt is NULL for unused levels */
        for (i = 1; i < c->n; ++i)
            if (c->pt[i].epoch == c->pt[i - 1].epoch) {
                int la = c->pt[i].line > c->pt[i - 1].line ? c->pt[i].line : c->pt[i - 1].line;
                cli_error(CMD, "%s:%d: epoch %.0f of resolution %d appears twice (also line %d)", lf->path, la, c->pt[i].epoch,
                          l + 1, c->pt[i].line + c->pt[i - 1].line - la);
                goto done;
            }
    }
    rc = 0;
done:
    free(buf);
    return rc;
}

static int cmd_plot_loss(int argc, char **argv) {
    plot_opts o;
    loss_file *lf = NULL;
    double lo = HUGE_VAL, hi = 0, PW, PH = 350, W, H, legw;
    int i, l, nf, cols, rowsn, ylog;
    char title[512], ylabel[64];
    sbuf b = {0};
    int rc = parse_opts(argc, argv, loss_usage, 0, &o);
    if (rc) return rc == 1 ? 0 : 2;
    if (!o.npos) { cli_error(CMD, "loss: expected at least one LOG.csv"); return 2; }
    nf = o.npos;
    lf = (loss_file *)calloc((size_t)nf, sizeof(loss_file));
    if (!lf) { cli_error(CMD, "out of memory"); return 1; }
    rc = 1;
    for (i = 0; i < nf; ++i) {
        if (label_file(o.pos[i], ".csv", lf[i].label, sizeof lf[i].label, &lf[i].path)) goto done;
        lf[i].named = lf[i].path != o.pos[i];
        if (loss_load(&lf[i])) goto done;
        for (l = 0; l < LOSS_MAX_RES; ++l) {
            int k;
            for (k = 0; k < lf[i].c[l].n; ++k) {
                double v = lf[i].c[l].pt[k].loss;
                if (v < lo) lo = v;
                if (v > hi) hi = v;
            }
        }
    }
    ylog = lo > 0 && hi / lo > 20;
    snprintf(ylabel, sizeof ylabel, "loss%s", ylog ? " (log scale)" : "");
    legw = 0;
    for (i = 0; i < nf; ++i)
        for (l = 0; l < LOSS_MAX_RES; ++l) {
            char lab[32];
            snprintf(lab, sizeof lab, "%c = %d", lf[i].level, lf[i].c[l].K);
            if (lf[i].c[l].n && text_w(lab, 12) + 30 > legw) legw = text_w(lab, 12) + 30;
        }
    cols = nf < 2 ? nf : 2; /* two 300-px panels a row keep the figure under ~1000 px */
    rowsn = (nf + cols - 1) / cols;
    PW = 84 + 300 + 20 + legw + 16;
    W = cols * PW + 8;
    H = 48 + rowsn * PH + 8;
    snprintf(title, sizeof title, "%s", o.title ? o.title : "Pretraining loss per resolution");
    svg_begin(&b, W, H, title);
    for (i = 0; i < nf; ++i) {
        plot_frame f;
        const char *labels[LOSS_MAX_RES], *colours[LOSS_MAX_RES];
        char lab[LOSS_MAX_RES][32];
        double ox = 8 + (i % cols) * PW, oy = 48 + (i / cols) * PH;
        int nl = 0;
        frame_place(&f, ox + 84, oy + 34, 300, 250);
        axis_linear(&f.ax, 1, lf[i].max_epoch, 6, 1, 1);
        if (ylog) axis_log(&f.ay, lo, hi);
        else axis_linear(&f.ay, lo, hi, 5, 0, 1);
        if (nf > 1 || lf[i].named) svg_text(&b, f.x + f.w / 2, oy + 22, 13, "middle", " font-weight=\"bold\"", "%s", lf[i].label);
        draw_frame(&b, &f, 1, "epoch", ylabel);
        for (l = 0; l < LOSS_MAX_RES; ++l) {
            const loss_curve *c = &lf[i].c[l];
            const char *col = palette[l % 8];
            int k;
            if (!c->n) continue;
            sb_printf(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
            for (k = 0; k < c->n; ++k)
                sb_printf(&b, "%s%.1f,%.1f", k ? " " : "", ax_px(&f.ax, c->pt[k].epoch), ax_px(&f.ay, c->pt[k].loss));
            sb_printf(&b, "\"/>\n");
            if (c->n <= 40) /* markers while they stay distinguishable (and for one-epoch logs) */
                for (k = 0; k < c->n; ++k)
                    sb_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.8\" fill=\"%s\"/>\n", ax_px(&f.ax, c->pt[k].epoch),
                              ax_px(&f.ay, c->pt[k].loss), col);
            snprintf(lab[nl], sizeof lab[nl], "%c = %d", lf[i].level, c->K);
            labels[nl] = lab[nl];
            colours[nl++] = col;
        }
        draw_legend(&b, f.x + f.w + 20, f.y, nl, labels, colours, LEGEND_LINE);
    }
    rc = svg_finish(&b, o.out) ? 1 : 0;
    if (!rc) {
        printf("| run | level | epochs | first loss | last loss |\n|---|---|---|---|---|\n");
        for (i = 0; i < nf; ++i)
            for (l = 0; l < LOSS_MAX_RES; ++l) {
                const loss_curve *c = &lf[i].c[l];
                if (!c->n) continue;
                printf("| ");
                md_cell(lf[i].label);
                printf(" | %c = %d | %d | %.6g | %.6g |\n", lf[i].level, c->K, c->n, c->pt[0].loss, c->pt[c->n - 1].loss);
            }
    }
done:
    free(b.p);
    if (lf)
        for (i = 0; i < nf; ++i)
            for (l = 0; l < LOSS_MAX_RES; ++l) free(lf[i].c[l].pt);
    free(lf);
    return rc;
}

/* ==== plot tsne ==================================================================== */

static const char *tsne_usage =
    "usage: hpjepa plot tsne DATASET_DIR EMB.npy --out F.svg [--perplexity P] [--iters N] [--seed S]\n"
    "                        [--threads T] [--title T]\n"
    "  Exact t-SNE (van der Maaten & Hinton 2008) of graph embeddings (a float32\n"
    "  (graphs, width) .npy from `hpjepa embed`, raw values): Gaussian conditional\n"
    "  P with a per-point binary search to the perplexity (default 30, lowered to\n"
    "  (graphs-1)/3 for small sets), P symmetrised over 2n, Student-t Q, early\n"
    "  exaggeration 12 and momentum 0.5 for the first 250 iterations, then 0.8;\n"
    "  the reference's gains (+0.2 / x0.8, floor 0.01); the exact gradient\n"
    "  4 sum_j (p_ij - q_ij) (y_i - y_j) / (1 + |y_i - y_j|^2) with learning rate\n"
    "  max(n / 12 / 4, 50) (Belkina et al. 2019, scikit-learn's 'auto'; equal to\n"
    "  the reference's 200 on the gradient without the 4 for n <= 2400).\n"
    "  Default 1000 iterations, seed 1 (N(0, 1e-4) start). O(n^2) per iteration;\n"
    "  deterministic and bit-identical for any thread count.\n"
    "  The SVG has two panels: points coloured by node-count quartile and by\n"
    "  class (by target quartile for a regression set). Prints\n"
    "    tsne n=<graphs> kl=<final KL(P||Q)> seconds=<float>\n"
    "    knn_class_agreement=<share of the 10 nearest map neighbours of the same class>\n"
    "    knn_quartile_agreement=<the same for the node-count quartile>\n";

#define TSNE_EXAGGERATION 12.0
#define TSNE_LYING_ITERS 250 /* exaggeration and momentum 0.5 until here */
#define TSNE_MIN_GAIN 0.01
#define TSNE_KNN 10
#define TSNE_MAX_POINTS 8000


/* Row i of the conditional P: p_j|i = exp(-beta d_ij) / sum, beta found by
   bisection so that the entropy is log(perplexity). Distances are shifted by
   the row minimum (the normalised P and the entropy do not change), so the
   sum never underflows whatever the scale of the embeddings. */
static void tsne_row_p(double *row, int n, int i, double log_perp) {
    double dmin = HUGE_VAL, beta = 1.0, bmin = -1, bmax = -1, sum = 1, H, Hprev = HUGE_VAL;
    int j, it;
    for (j = 0; j < n; ++j)
        if (j != i && row[j] < dmin) dmin = row[j];
    for (j = 0; j < n; ++j) row[j] = j == i ? 0.0 : row[j] - dmin;
    /* row holds shifted distances; p is written over it at the end */
    for (it = 0; it < 200; ++it) {
        double sdp = 0;
        sum = 0;
        for (j = 0; j < n; ++j)
            if (j != i) {
                double p = exp(-beta * row[j]);
                sum += p;
                sdp += row[j] * p;
            }
        H = log(sum) + beta * sdp / sum;
        if (fabs(H - log_perp) < 1e-5 || H == Hprev) break; /* converged, or degenerate (all equal) */
        Hprev = H;
        if (H > log_perp) {
            bmin = beta;
            beta = bmax < 0 ? beta * 2 : (beta + bmax) / 2;
        } else {
            bmax = beta;
            beta = bmin < 0 ? beta / 2 : (beta + bmin) / 2;
        }
    }
    for (j = 0; j < n; ++j) row[j] = j == i ? 0.0 : exp(-beta * row[j]);
    sum = 0;
    for (j = 0; j < n; ++j) sum += row[j];
    for (j = 0; j < n; ++j) row[j] /= sum;
}

/* One row of the t-SNE sums, in j order: with w_ij = 1 / (1 + |y_i - y_j|^2),
   out = (sum_j w_ij, sum_j p_ij w_ij (y_i - y_j), sum_j w_ij^2 (y_i - y_j)),
   so the gradient 4 sum_j (p_ij - w_ij / Z) w_ij (y_i - y_j) needs one pass
   once Z = sum_ij w_ij is known. The w row goes through scratch first: that
   loop vectorises (no reduction), the ordered sums then run scalar. */
static void tsne_row(const double *Y, const double *p, int n, int i, double *out, double *w) {
    double z = 0, ax = 0, ay = 0, bx = 0, by = 0, yx = Y[2 * i], yy = Y[2 * i + 1];
    int j;
    for (j = 0; j < n; ++j) {
        double dx = yx - Y[2 * j], dy = yy - Y[2 * j + 1];
        w[j] = 1.0 / (1.0 + dx * dx + dy * dy);
    }
    w[i] = 0;
    for (j = 0; j < n; ++j) {
        double dx = yx - Y[2 * j], dy = yy - Y[2 * j + 1], pw = p[j] * w[j], ww = w[j] * w[j];
        z += w[j];
        ax += pw * dx;
        ay += pw * dy;
        bx += ww * dx;
        by += ww * dy;
    }
    out[0] = z;
    out[1] = ax;
    out[2] = ay;
    out[3] = bx;
    out[4] = by;
}

static int plot_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int plot_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Exact t-SNE of X (n, d) into Y (n, 2). Every row is summed by one thread
   in a fixed order and the global sums run serially, so the result does
   not depend on the thread count. Small maps stay serial: a fork/join per
   iteration costs more than the work, badly so on a busy machine. */
#define TSNE_PARALLEL_MIN 256
static int tsne_run(const double *X, int n, int d, double perplexity, int iters, uint64_t seed, double *Y, double *kl) {
    double *P = (double *)malloc(sizeof(double) * (size_t)n * n), *R = (double *)malloc(sizeof(double) * 5 * (size_t)n);
    double *U = (double *)calloc(2 * (size_t)n, sizeof(double)), *gains = (double *)malloc(sizeof(double) * 2 * (size_t)n);
    double *W = (double *)malloc(sizeof(double) * (size_t)plot_threads() * n); /* a scratch row per thread */
    double eta = n / TSNE_EXAGGERATION / 4 > 50 ? n / TSNE_EXAGGERATION / 4 : 50, log_perp = log(perplexity);
    int par = n >= TSNE_PARALLEL_MIN, i, j, it;
    hpj_rng rng;
    (void)par; /* unused without OpenMP */
    if (!P || !R || !U || !gains || !W) {
        free(P); free(R); free(U); free(gains); free(W);
        cli_error(CMD, "out of memory (t-SNE of %d points needs %.0f MB)", n, 8.0 * n * n / 1e6);
        return -1;
    }
    /* squared distances, each pair once (rows own their upper triangle) */
    PLOT_OMP(parallel for schedule(dynamic, 8) if(par))
    for (i = 0; i < n; ++i) {
        int jj, k;
        P[(size_t)i * n + i] = 0;
        for (jj = i + 1; jj < n; ++jj) {
            const double *a = X + (size_t)i * d, *c = X + (size_t)jj * d;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (k = 0; k + 4 <= d; k += 4) { /* 4 chains: fixed order, not latency bound */
                s0 += (a[k] - c[k]) * (a[k] - c[k]);
                s1 += (a[k + 1] - c[k + 1]) * (a[k + 1] - c[k + 1]);
                s2 += (a[k + 2] - c[k + 2]) * (a[k + 2] - c[k + 2]);
                s3 += (a[k + 3] - c[k + 3]) * (a[k + 3] - c[k + 3]);
            }
            for (; k < d; ++k) s0 += (a[k] - c[k]) * (a[k] - c[k]);
            P[(size_t)i * n + jj] = P[(size_t)jj * n + i] = (s0 + s1) + (s2 + s3);
        }
    }
    PLOT_OMP(parallel for schedule(dynamic, 8) if(par))
    for (i = 0; i < n; ++i) tsne_row_p(P + (size_t)i * n, n, i, log_perp);
    for (i = 0; i < n; ++i) /* symmetrise: p_ij = (p_j|i + p_i|j) / 2n */
        for (j = i + 1; j < n; ++j) {
            double s = (P[(size_t)i * n + j] + P[(size_t)j * n + i]) / (2.0 * n);
            P[(size_t)i * n + j] = P[(size_t)j * n + i] = s;
        }
    hpj_rng_seed(&rng, seed);
    for (i = 0; i < 2 * n; ++i) {
        Y[i] = 1e-4 * hpj_rng_normal(&rng);
        gains[i] = 1.0;
    }
    for (it = 0; it <= iters; ++it) { /* the last pass only measures the final map */
        double exag = it < TSNE_LYING_ITERS ? TSNE_EXAGGERATION : 1.0, mom = it < TSNE_LYING_ITERS ? 0.5 : 0.8;
        double Z = 0, mx = 0, my = 0;
        PLOT_OMP(parallel if(par))
        {
            double *w = W + (size_t)plot_thread() * n;
            int r;
            PLOT_OMP(for schedule(static))
            for (r = 0; r < n; ++r) tsne_row(Y, P + (size_t)r * n, n, r, R + 5 * (size_t)r, w);
        }
        for (i = 0; i < n; ++i) Z += R[5 * i];
        if (it == iters) break;
        for (i = 0; i < n; ++i) {
            int k;
            for (k = 0; k < 2; ++k) {
                double g = 4 * (exag * R[5 * i + 1 + k] - R[5 * i + 3 + k] / Z);
                double *gn = &gains[2 * i + k], *u = &U[2 * i + k];
                *gn = (g > 0) != (*u > 0) ? *gn + 0.2 : *gn * 0.8;
                if (*gn < TSNE_MIN_GAIN) *gn = TSNE_MIN_GAIN;
                *u = mom * *u - eta * *gn * g;
                Y[2 * i + k] += *u;
            }
        }
        for (i = 0; i < n; ++i) { mx += Y[2 * i]; my += Y[2 * i + 1]; }
        mx /= n;
        my /= n;
        for (i = 0; i < n; ++i) { Y[2 * i] -= mx; Y[2 * i + 1] -= my; }
    }
    /* KL(P || Q) of the final map, Q = w / Z; rows in parallel, summed in order */
    {
        double Z = 0, s = 0;
        for (i = 0; i < n; ++i) Z += R[5 * i];
        PLOT_OMP(parallel for schedule(static) if(par))
        for (i = 0; i < n; ++i) {
            const double *p = P + (size_t)i * n;
            double r = 0;
            int jj;
            for (jj = 0; jj < n; ++jj) {
                double dx = Y[2 * i] - Y[2 * jj], dy = Y[2 * i + 1] - Y[2 * jj + 1], q;
                if (jj == i || p[jj] <= 0) continue;
                q = 1.0 / (1.0 + dx * dx + dy * dy) / Z;
                r += p[jj] * log(p[jj] / (q > 1e-300 ? q : 1e-300));
            }
            R[5 * i] = r; /* R is free now */
        }
        for (i = 0; i < n; ++i) s += R[5 * i];
        *kl = s;
    }
    free(P); free(R); free(U); free(gains); free(W);
    return 0;
}

/* Share of each point's k nearest map neighbours (ties to the lower index)
   that carry the same group. */
static double knn_agreement(const double *Y, int n, const int *group, int k) {
    int i, same = 0, total = 0;
    int *nb = (int *)malloc(sizeof(int) * (size_t)k);
    double *nd = (double *)malloc(sizeof(double) * (size_t)k);
    if (!nb || !nd || n < 2) { free(nb); free(nd); return 0.0; }
    if (k > n - 1) k = n - 1;
    for (i = 0; i < n; ++i) {
        int j, m = 0, t;
        for (j = 0; j < n; ++j) {
            double dx = Y[2 * i] - Y[2 * j], dy = Y[2 * i + 1] - Y[2 * j + 1], dd = dx * dx + dy * dy;
            if (j == i || (m == k && dd >= nd[k - 1])) continue;
            for (t = m < k ? m++ : k - 1; t > 0 && nd[t - 1] > dd; --t) { nd[t] = nd[t - 1]; nb[t] = nb[t - 1]; }
            nd[t] = dd;
            nb[t] = j;
        }
        for (t = 0; t < m; ++t) same += group[nb[t]] == group[i];
        total += m;
    }
    free(nb);
    free(nd);
    return total ? (double)same / total : 0.0;
}

/* One scatter panel: frame, points in draw order, the legend in columns
   under the x axis title (`width` px wide from x = lx). */
static void tsne_panel(sbuf *b, const plot_frame *f, const char *title, const double *Y, const int32_t *order, int n,
                       const int *group, const char *const *colours, int ngroups, const char *const *labels, double lx,
                       double width) {
    int i;
    svg_text(b, f->x + f->w / 2, f->y - 12, 14, "middle", " font-weight=\"bold\"", "%s", title);
    draw_frame(b, f, 1, "t-SNE 1", "t-SNE 2");
    for (i = 0; i < n; ++i) {
        int g = order[i];
        sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\" fill=\"%s\" fill-opacity=\"0.8\"/>\n", ax_px(&f->ax, Y[2 * g]),
                  ax_px(&f->ay, Y[2 * g + 1]), colours[group[g]]);
    }
    draw_legend_grid(b, lx, f->y + f->h + 54, width, ngroups, labels, colours, LEGEND_DOT);
}

static int cmd_plot_tsne(int argc, char **argv) {
    plot_opts o;
    hpj_dataset ds;
    float *E = NULL;
    double *X = NULL, *Y = NULL, *vals = NULL, kl = 0, t0, perp, cx, cy, scale, fw, fh, lo[2], hi[2];
    int *qgroup = NULL, *cgroup = NULL, i, n, d, ncls, regression, rc;
    int32_t *order = NULL;
    long long rows, cols;
    quartiles qn, qt;
    char title[512], lab_q[4][96], lab_c[64][96], foot[512];
    const char *lq[4], *lc[64], *cc[64];
    rc = parse_opts(argc, argv, tsne_usage, 1, &o);
    if (rc) return rc == 1 ? 0 : 2;
    if (o.npos != 2) { cli_error(CMD, "tsne: expected DATASET_DIR and EMB.npy, got %d argument%s", o.npos, o.npos == 1 ? "" : "s"); return 2; }
#ifdef _OPENMP
    if (o.threads) omp_set_num_threads((int)o.threads);
#endif
    if (cli_load_dataset(CMD, o.pos[0], &ds)) return 1;
    rc = 1;
    E = cli_read_npy(CMD, o.pos[1], &rows, &cols);
    if (!E) goto done;
    if (rows != ds.num_graphs) {
        cli_error(CMD, "%s: has %lld rows but %s has %d graphs", o.pos[1], rows, ds.name, ds.num_graphs);
        goto done;
    }
    if (rows < 4 || cols < 1) { cli_error(CMD, "%s: t-SNE needs at least 4 graphs and 1 column", o.pos[1]); goto done; }
    if (rows > TSNE_MAX_POINTS) { /* P alone is n^2 doubles and every iteration O(n^2) */
        cli_error(CMD, "%s: %lld graphs is too many for exact t-SNE (at most %d: %.1f GB and ~%.0f min here)", o.pos[1], rows,
                  TSNE_MAX_POINTS, 8.0 * rows * rows / 1e9, 3e-9 * rows * rows * 1000 / 60);
        goto done;
    }
    n = (int)rows;
    d = (int)cols;
    regression = ds.num_classes == 0;
    ncls = regression ? 4 : ds.num_classes;
    perp = o.perplexity;
    if (perp > (n - 1) / 3.0) {
        perp = (n - 1) / 3.0;
        fprintf(stderr, "hpjepa plot: perplexity lowered from %g to %.4g for %d graphs\n", o.perplexity, perp, n);
    }
    X = (double *)malloc(sizeof(double) * (size_t)n * d);
    Y = (double *)malloc(sizeof(double) * 2 * (size_t)n);
    vals = (double *)malloc(sizeof(double) * (size_t)n);
    qgroup = (int *)malloc(sizeof(int) * (size_t)n);
    cgroup = (int *)malloc(sizeof(int) * (size_t)n);
    order = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    if (!X || !Y || !vals || !qgroup || !cgroup || !order) { cli_error(CMD, "out of memory"); goto done; }
    for (i = 0; i < n * d; ++i) X[i] = E[i];
    for (i = 0; i < n; ++i) vals[i] = (double)(ds.node_ptr[i + 1] - ds.node_ptr[i]);
    if (quartiles_compute(vals, n, &qn)) goto done;
    for (i = 0; i < n; ++i) qgroup[i] = quartile_of(&qn, vals[i]);
    if (regression) {
        if (!ds.target) { cli_error(CMD, "%s: neither class labels nor targets", ds.name); goto done; }
        for (i = 0; i < n; ++i) vals[i] = ds.target[(size_t)i * ds.target_dim];
        if (quartiles_compute(vals, n, &qt)) goto done;
        for (i = 0; i < n; ++i) cgroup[i] = quartile_of(&qt, vals[i]);
    } else
        for (i = 0; i < n; ++i) cgroup[i] = ds.graph_label[i];
    t0 = cli_now();
    if (tsne_run(X, n, d, perp, (int)o.iters, (uint64_t)o.seed, Y, &kl)) goto done;
    t0 = cli_now() - t0;
    /* legends */
    for (i = 0; i < 4; ++i) {
        char name[80];
        quartile_name(&qn, i, "node", name, sizeof name);
        snprintf(lab_q[i], sizeof lab_q[i], "%s: %d", name, qn.count[i]);
        lq[i] = lab_q[i];
    }
    if (ncls > 64) ncls = 64; /* more classes share colours and the legend stops at 64 */
    for (i = 0; i < ncls; ++i) {
        int c = 0, g;
        char name[80];
        for (g = 0; g < n; ++g) c += cgroup[g] == i;
        if (regression) quartile_name(&qt, i, NULL, name, sizeof name);
        else snprintf(name, sizeof name, "class %d", ds.class_value[i]);
        snprintf(lab_c[i], sizeof lab_c[i], "%s: %d", name, c);
        lc[i] = lab_c[i];
        cc[i] = regression ? target_quartile_colour[i] : class_colour[i % 8];
    }
    /* a shuffled draw order, so no group systematically hides another */
    {
        hpj_rng r = hpj_rng_stream((uint64_t)o.seed, 1, 0);
        for (i = 0; i < n; ++i) order[i] = i;
        hpj_rng_shuffle_i32(&r, order, n);
    }
    lo[0] = hi[0] = Y[0];
    lo[1] = hi[1] = Y[1];
    for (i = 0; i < n; ++i) {
        int k;
        for (k = 0; k < 2; ++k) {
            if (Y[2 * i + k] < lo[k]) lo[k] = Y[2 * i + k];
            if (Y[2 * i + k] > hi[k]) hi[k] = Y[2 * i + k];
        }
    }
    /* the frame takes the map's aspect ratio within 200..360 px a side, one
       scale for both axes: two panels side by side stay under ~930 px, and
       the legends go under them, so the figure fits a page or a laptop
       window at its natural size */
    {
        double sx = hi[0] - lo[0] + 1e-12, sy = hi[1] - lo[1] + 1e-12;
        scale = 360 / (sx > sy ? sx : sy) * 0.94;
        fw = sx * scale / 0.94;
        fh = sy * scale / 0.94;
        if (fw < 200) fw = 200;
        if (fh < 200) fh = 200;
        cx = (lo[0] + hi[0]) / 2;
        cy = (lo[1] + hi[1]) / 2;
    }
    {
        double qa = knn_agreement(Y, n, qgroup, TSNE_KNN), ca = knn_agreement(Y, n, cgroup, TSNE_KNN), PW, W, H, LW, legh, lh;
        plot_frame f;
        sbuf b = {0};
        int k;
        const char *cname = regression ? "target quartile" : "class";
        char foot2[256];
        LW = fw > 360 ? fw : 360; /* the legends' width under each frame */
        PW = 72 + LW + 24;
        W = 2 * PW + 16;
        /* the legends' height: measured by drawing them into a scratch buffer */
        {
            sbuf scratch = {0};
            legh = draw_legend_grid(&scratch, 0, 0, LW, 4, lq, quartile_colour, LEGEND_DOT);
            lh = draw_legend_grid(&scratch, 0, 0, LW, ncls, lc, cc, LEGEND_DOT);
            if (lh > legh) legh = lh;
            free(scratch.p);
        }
        /* the footnote: one line, or two split after the KL when too long */
        snprintf(foot, sizeof foot, "Exact t-SNE: %d graphs, perplexity %.4g, %lld iterations, seed %lld, KL %.4f.", n, perp,
                 o.iters, o.seed, kl);
        snprintf(foot2, sizeof foot2, "10-NN agreement in the map: %s %.3f, quartile %.3f.", cname, ca, qa);
        if (text_w(foot, 11) + text_w(foot2, 11) + 7 < W - 24) {
            size_t nf = strlen(foot);
            snprintf(foot + nf, sizeof foot - nf, " %s", foot2);
            foot2[0] = 0;
        }
        H = 80 + fh + 54 + legh + 16 + (foot2[0] ? 32 : 16) + 8;
        if (o.title) snprintf(title, sizeof title, "%s", o.title);
        else snprintf(title, sizeof title, "t-SNE of %s embeddings (%s)", ds.name, base_name(o.pos[1]));
        svg_begin(&b, W, H, title);
        for (k = 0; k < 2; ++k) {
            frame_place(&f, 8 + k * PW + 72 + (LW - fw) / 2, 80, fw, fh);
            axis_linear(&f.ax, cx - fw / 2 / scale, cx + fw / 2 / scale, 5, 0, 0);
            axis_linear(&f.ay, cy - fh / 2 / scale, cy + fh / 2 / scale, 5, 0, 0);
            if (k == 0)
                tsne_panel(&b, &f, "coloured by node-count quartile", Y, order, n, qgroup, quartile_colour, 4, lq, 8 + k * PW + 72,
                           LW);
            else
                tsne_panel(&b, &f, regression ? "coloured by target quartile" : "coloured by class", Y, order, n, cgroup, cc, ncls,
                           lc, 8 + k * PW + 72, LW);
        }
        svg_text(&b, 12, H - 14 - (foot2[0] ? 16 : 0), 11, "start", " fill=\"#555555\"", "%s", foot);
        if (foot2[0]) svg_text(&b, 12, H - 14, 11, "start", " fill=\"#555555\"", "%s", foot2);
        rc = svg_finish(&b, o.out) ? 1 : 0;
        free(b.p);
        if (!rc) {
            printf("tsne n=%d kl=%.4f seconds=%.2f\n", n, kl, t0);
            printf("knn_%s_agreement=%.4f\nknn_quartile_agreement=%.4f\n", regression ? "target_quartile" : "class", ca, qa);
        }
    }
done:
    free(E);
    free(X);
    free(Y);
    free(vals);
    free(qgroup);
    free(cgroup);
    free(order);
    hpj_dataset_free(&ds);
    return rc;
}

/* ==== dispatch ====================================================================== */

static const char *plot_usage =
    "usage: hpjepa plot KIND ... --out F.svg   (hpjepa plot KIND --help for details)\n"
    "  quartiles LABEL=FILE.graphs.csv ...   accuracy per node-count quartile (eval --report)\n"
    "  sweep LABEL=REPORT.json ...           resolution-bank sweep bars (eval --report)\n"
    "  tsne DATASET_DIR EMB.npy              exact t-SNE map by node-count quartile and class\n"
    "  loss LOG.csv ...                      pretraining loss per resolution (pretrain --loss-log)\n"
    "  Every kind writes one self-contained SVG (atomically) and prints a summary\n"
    "  on stdout; --title T replaces the default title.\n";

int cmd_plot(int argc, char **argv) {
    const char *k;
    if (argc < 2) {
        cli_error(CMD, "missing plot kind (quartiles, sweep, tsne, loss; see hpjepa plot --help)");
        return 2;
    }
    k = argv[1];
    if (cli_is_help(k)) { fputs(plot_usage, stdout); return 0; }
    if (!strcmp(k, "quartiles")) return cmd_plot_quartiles(argc - 1, argv + 1);
    if (!strcmp(k, "sweep")) return cmd_plot_sweep(argc - 1, argv + 1);
    if (!strcmp(k, "tsne")) return cmd_plot_tsne(argc - 1, argv + 1);
    if (!strcmp(k, "loss")) return cmd_plot_loss(argc - 1, argv + 1);
    cli_error(CMD, "unknown plot kind '%s' (quartiles, sweep, tsne, loss)", k);
    return 2;
}
