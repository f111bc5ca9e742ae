# The one code path behind ensemble(), pcc(), pla() and dpp().

.run_scc <- function(method, x, args, ensemble = NULL, ensembleArgs = list(),
                     assay.type = "logcounts", use.dimred = NULL, progress = FALSE,
                     colLabels = FALSE, ensembleKeyGiven = FALSE) {
    if (!(isTRUE(progress) || isFALSE(progress))) {
        stop("progress must be TRUE or FALSE, not ", deparse(progress), ".", call. = FALSE)
    }
    bridge <- .scc_bridge()
    input <- .item_matrix(x, assay.type, use.dimred)
    n <- input$n
    if (!is.null(input$names) && anyDuplicated(input$names)) {
        dup <- input$names[anyDuplicated(input$names)]
        stop("x has duplicate column names (e.g. '", dup, "'); make them unique first, ",
             "e.g. colnames(x) <- make.unique(colnames(x)).", call. = FALSE)
    }
    is_se <- methods::is(x, "SummarizedExperiment")
    if (isTRUE(colLabels) && !is_se) {
        stop("colLabels = TRUE needs a SingleCellExperiment; x is a ", class(x)[1], ".",
             call. = FALSE)
    }
    if (method == "ensemble") {
        .check_k(args[["k", exact = TRUE]])
        .check_resolution(args[["resolution", exact = TRUE]])
    }
    .check_k(ensembleArgs[["k", exact = TRUE]])
    .check_resolution(ensembleArgs[["resolution", exact = TRUE]])
    takes_ensemble <- method != "ensemble" &&
        isTRUE(reticulate::py_to_r(.py_try(bridge$uses_ensemble(method))))
    stored <- NULL  # the reducedDim the ensemble was taken from
    if (takes_ensemble) {
        key <- args[["ensembleKey", exact = TRUE]]
        if (is.null(key)) key <- "scc_ensemble"
        dimreds <- if (methods::is(x, "SingleCellExperiment")) {
            SingleCellExperiment::reducedDimNames(x)
        } else character(0)
        if (is.null(ensemble) && key %in% dimreds) {
            # reuse an ensemble stored by ensemble(sce, name = key)
            ensemble <- SingleCellExperiment::reducedDim(x, key)
            stored <- key
        } else if (is.null(ensemble) && is_se && ensembleKeyGiven && !length(ensembleArgs)) {
            stop("ensembleKey = '", key, "' is not among reducedDimNames(x): ",
                 paste(dimreds, collapse = ", "), ". Store one with ensemble(x, name = '",
                 key, "'), or pass ensembleArgs to build it.", call. = FALSE)
        }
    }
    ensemble <- .ensemble_spec(ensemble, n)
    res <- .py_try({
        adata <- bridge$make_adata(input$spec, input$names)
        out <- bridge$run(method, adata, .py_args(args),
                          if (is.null(ensemble)) NULL else ensemble,
                          .py_args(ensembleArgs), as.logical(progress))
        reticulate::py_to_r(out)
    })
    for (w in unlist(res$warnings)) warning(.py_message(w), call. = FALSE)
    obs <- lapply(res$obs, .decode)
    obsm <- lapply(res$obsm, .decode_obsm, names = input$names)
    obsm[stored] <- NULL  # already in x, as the user stored it
    uns <- lapply(res$uns, .decode)
    key <- res$key
    if (!is.null(key)) {
        memb_key <- paste0(key, "_membership")
        bioc <- .bioc_labels(obs[[key]], obsm[[memb_key]])
        obs[[key]] <- bioc$labels
        if (!is.null(obsm[[memb_key]])) obsm[[memb_key]] <- bioc$membership
    }
    if (is_se) {
        if (!methods::is(x, "SingleCellExperiment")) {
            x <- methods::as(x, "SingleCellExperiment")
        }
        for (col in names(obs)) SummarizedExperiment::colData(x)[[col]] <- unname(obs[[col]])
        for (k in names(obsm)) SingleCellExperiment::reducedDim(x, k) <- obsm[[k]]
        for (k in names(uns)) S4Vectors::metadata(x)[[k]] <- uns[[k]]
        if (isTRUE(colLabels) && !is.null(key)) {
            SingleCellExperiment::colLabels(x) <- unname(obs[[key]])
        }
        return(x)
    }
    out <- list()
    if (!is.null(key)) {
        out$labels <- stats::setNames(obs[[key]], input$names)
        out$membership <- obsm[[paste0(key, "_membership")]]
        conf <- paste0(key, "_confidence")
        if (!is.null(obs[[conf]])) out$confidence <- stats::setNames(obs[[conf]], input$names)
    }
    out$obs <- as.data.frame(lapply(obs, unname), row.names = input$names, optional = TRUE)
    out$obsm <- obsm
    out$uns <- uns
    out
}
