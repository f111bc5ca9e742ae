# The one code path behind ensemble(), pcc(), pla() and dpp().

.run_scc <- function(name, x, args, ensemble = NULL, ensembleArgs = list(),
                     assay.type = "logcounts", use.dimred = NULL) {
    bridge <- .scc_bridge()
    input <- .item_matrix(x, assay.type, use.dimred)
    n <- input$n
    is_sce <- methods::is(x, "SingleCellExperiment")
    if (is.null(ensemble) && is_sce && name != "ensemble" &&
        "scc_ensemble" %in% SingleCellExperiment::reducedDimNames(x)) {
        # reuse an ensemble stored by ensemble(sce)
        ensemble <- SingleCellExperiment::reducedDim(x, "scc_ensemble")
    }
    ensemble <- .ensemble_spec(ensemble, n)
    res <- .py_try({
        adata <- bridge$make_adata(input$spec, input$names)
        out <- bridge$run(name, adata, .py_args(args),
                          if (is.null(ensemble)) NULL else ensemble,
                          .py_args(ensembleArgs))
        reticulate::py_to_r(out)
    })
    obs <- lapply(res$obs, .decode)
    obsm <- lapply(res$obsm, .decode_obsm, names = input$names)
    res$uns <- lapply(res$uns, .decode)
    if (is_sce || methods::is(x, "SummarizedExperiment")) {
        if (!is_sce) x <- methods::as(x, "SingleCellExperiment")
        for (col in names(obs)) SummarizedExperiment::colData(x)[[col]] <- obs[[col]]
        for (key in names(obsm)) SingleCellExperiment::reducedDim(x, key) <- obsm[[key]]
        for (key in names(res$uns)) S4Vectors::metadata(x)[[key]] <- res$uns[[key]]
        return(x)
    }
    key <- res$key
    out <- list()
    if (!is.null(key)) {
        out$labels <- stats::setNames(obs[[key]], input$names)
        out$membership <- obsm[[paste0(key, "_membership")]]
        colnames(out$membership) <- levels(obs[[key]])[seq_len(ncol(out$membership))]
        conf <- paste0(key, "_confidence")
        if (!is.null(obs[[conf]])) out$confidence <- stats::setNames(obs[[conf]], input$names)
    }
    out$obs <- as.data.frame(obs, row.names = input$names, optional = TRUE)
    out$obsm <- obsm
    out$uns <- res$uns
    out
}
