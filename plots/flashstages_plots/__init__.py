"""flashstages_plots: the figures, README tables and inline numbers of flashstages, drawn from the
Google Benchmark JSON of a results folder. plots/plot_results.py is its command line.

    results.py    reading the JSON: benchmark names, the one row per benchmark, Results, contexts
    series.py     baseline, stages and peers; their order; runs grouped into lines over N or size
    captions.py   the caption under every table and figure; how numbers and percentages are written
    headline.py   peaks, instruction ceilings, the headline entries (ladder, roofline) and roofs
    techniques.py each version's one idea, read from its registry descriptor in stages/**/vN.cu
    tables.py     the markdown tables: one function per block kind (BLOCK_KINDS), render_block
    figures.py    the PNGs (matplotlib, imported only there and only when drawing)
    markers.py    the doc markers: <!-- results:NAME:begin/end --> blocks and <!-- value: … --> numbers
    files.py      which files --readme and --repo-docs render (markdown only), and rendering them

Each module's tests sit beside it (test_<module>.py); plots/test_plot_results.py runs them all.
"""
