# The one code path behind ensemble(), pcc(), pla() and dpp().

.run_scc <- function(method, x, args, ensemble = NULL, ensembleArgs = list(),
                     assay.type = "logcounts", use.dimred = NULL, progress = FALSE,
                     colLabels = FALSE, ensembleKeyGiven = FALSE, verbose = FALSE,
                     repGiven = FALSE) {
    for (flag in c("progress", "verbose")) {
        value <- get(flag)
        if (!(isTRUE(value) || isFALSE(value))) {
            stop(flag, " must be TRUE or FALSE, not ", deparse(value), ".", call. = FALSE)
        }
    }
    bridge <- .scc_bridge()
    is_se <- methods::is(x, "SummarizedExperiment")
    found <- .stored_ensemble(method, x, args, ensemble, ensembleArgs, ensembleKeyGiven, bridge)
    ensemble <- found$ensemble
    stored <- found$stored  # the reducedDim the ensemble was taken from
    # the representation the stored ensemble was built on, unless the call names one
    recorded <- if (!is.null(stored) && !repGiven) {
        S4Vectors::metadata(x)[[stored]]$representation
    }
    if (!is.null(recorded$use.dimred)) use.dimred <- recorded$use.dimred
    if (!is.null(recorded$assay.type)) assay.type <- recorded$assay.type
    input <- .item_matrix(x, assay.type, use.dimred, call = paste0(method, "()"))
    x <- .as_sce(x, method, args)
    n <- input$n
    .check_item_names(input$names)
    if (isTRUE(colLabels) && !is_se) {
        stop("colLabels = TRUE needs a SingleCellExperiment; x is a ", class(x)[1], ".",
             call. = FALSE)
    }
    if (method == "ensemble") {
        .check_k(args[["k", exact = TRUE]])
        .check_resolution(args[["resolution", exact = TRUE]])
    }
    each_k <- .check_each_k(args, method, n, colLabels)
    .check_k(ensembleArgs[["k", exact = TRUE]])
    .check_resolution(ensembleArgs[["resolution", exact = TRUE]])
    ensemble <- .ensemble_spec(.rows_by_name(ensemble, input$names), n)
    if (is_se) .refuse_foreign_early(x, method, args, each_k)
    # said once the call is known to run (a trial met it before an error about use.dimred)
    if (!is.null(found$unused)) {
        .signal_conditions(list(list(type = "warning", message = found$unused,
                                     category = "UserWarning")), FALSE)
    }
    res <- .py_try({
        adata <- bridge$make_adata(input$spec, input$names, input$features,
                                   input$representation)
        # a stored ensemble's recipe, which nNull (tl.k_null) rebuilds on reference data
        # (its params and partitions only: whatever else a user put there need not convert)
        record <- if (!is.null(stored)) S4Vectors::metadata(x)[[stored]]
        record <- record[intersect(c("params", "partitions"), names(record))]
        out <- bridge$run(method, adata, .py_args(args),
                          if (is.null(ensemble)) NULL else ensemble,
                          .py_args(ensembleArgs), as.logical(progress), verbose,
                          ensemble_record = record)
        reticulate::py_to_r(out)
    })
    .signal_conditions(res$conditions, verbose)
    obs <- lapply(res$obs, .decode)
    obsm <- lapply(res$obsm, .decode_obsm, names = input$names)
    obsm[stored] <- NULL  # already in x, as the user stored it
    representation <- if (!is_se) NULL else if (is.null(use.dimred)) {
        list(assay.type = assay.type)
    } else list(use.dimred = use.dimred)
    uns <- lapply(lapply(res$uns, .decode), .r_params, representation = representation)
    uns <- lapply(uns, .one_based_clusters)
    keys <- unlist(res$keys)  # every result with a membership (consensusK: one per k)
    bioc <- .bioc_results(keys, obs, obsm)
    obs <- bioc$obs
    obsm <- bioc$obsm
    key <- keys[1]
    if (is_se) {
        # record what a built ensemble was built on, for pcc() and pla() to reuse
        built <- if (method == "ensemble") names(obsm) else if (is.null(found$ensemble)) found$key
        label <- if (isTRUE(colLabels) && !is.null(key)) obs[[key]]
        return(.store_sce(x, obs, obsm, uns, intersect(built, names(obsm)), representation,
                          label))
    }
    if (each_k) {
        shared <- c(found$key, paste0(found$key, "_run"))  # a built ensemble, whatever its name
        return(.each_k_results(keys, obs, obsm, uns, input$names, shared))
    }
    .matrix_result(key, obs, obsm, uns, input$names)
}

# .refuse_foreign before the run, for the names ensemble(), pcc(), pla() and dpp() will
# surely write (the check after it, on everything written, stays): no computation lost.
.refuse_foreign_early <- function(x, method, args, each_k) {
    if (!method %in% c("ensemble", "pcc", "pla", "dpp")) return(invisible())
    name <- .result_name(args, method)
    keys <- if (!each_k) name else vapply(unlist(args[["nClusters", exact = TRUE]]),
                                          function(k) .each_k_key(args, method, k), "")
    if (method == "ensemble") {
        return(.refuse_foreign(x, character(0), c(keys, paste0(keys, "_run"))))
    }
    .refuse_foreign(x, c(keys, paste0(keys, "_confidence"), paste0(keys, "_entropy")),
                    paste0(keys, "_membership"))
}

# Every result's labels "1".."k" and its membership (and consensus-k's item consensus)
# columns named alike, as bluster and scran give them.
.bioc_results <- function(keys, obs, obsm) {
    for (key in keys) {
        memb_key <- paste0(key, "_membership")
        item_key <- paste0(key, "_item_consensus")  # consensus-k's, one column per cluster
        if (!is.null(obsm[[item_key]])) {
            obsm[[item_key]] <- .bioc_labels(obs[[key]], obsm[[item_key]])$membership
        }
        bioc <- .bioc_labels(obs[[key]], obsm[[memb_key]])
        obs[[key]] <- bioc$labels
        if (!is.null(obsm[[memb_key]])) obsm[[memb_key]] <- bioc$membership
    }
    list(obs = obs, obsm = obsm)
}

# `x` (as a SingleCellExperiment) with the results: colData, reducedDims, metadata; the
# representation recorded for the ensembles `built`, and `label` as colLabels if given.
.store_sce <- function(x, obs, obsm, uns, built, representation, label) {
    if (!methods::is(x, "SingleCellExperiment")) {
        x <- methods::as(x, "SingleCellExperiment")
    }
    .refuse_foreign(x, names(obs), names(obsm))
    x <- .drop_earlier_k(x, uns)
    for (col in names(obs)) SummarizedExperiment::colData(x)[[col]] <- unname(obs[[col]])
    for (nm in names(obsm)) SingleCellExperiment::reducedDim(x, nm) <- obsm[[nm]]
    for (nm in names(uns)) S4Vectors::metadata(x)[[nm]] <- uns[[nm]]
    for (nm in built) S4Vectors::metadata(x)[[nm]]$representation <- representation
    if (!is.null(label)) SingleCellExperiment::colLabels(x) <- unname(label)
    x
}

# A consensus-k record replaced in `uns` takes with it every k its earlier run wrote and
# this one does not (as Python's tl.consensus_k does: maxK = 5, then 3, left k4 and k5 in
# colData beside a record that no longer listed them); one warning names them.
.drop_earlier_k <- function(x, uns) {
    meta <- S4Vectors::metadata(x)
    kinds <- c("consensus_k", "consensus_cluster_plus")
    gone <- character(0)
    for (nm in names(uns)) {
        old <- meta[[nm]]
        if (!is.list(old) || !isTRUE(old[["method"]] %in% kinds)) next
        stale <- setdiff(unlist(old[["keys"]]), unlist(uns[[nm]][["keys"]]))
        ours <- function(k) is.list(meta[[k]]) && isTRUE(meta[[k]][["method"]] %in% kinds)
        stale <- stale[vapply(stale, ours, logical(1))]  # not what the user put there since
        for (k in stale) {
            cols <- intersect(paste0(k, c("", "_confidence", "_entropy")),
                              names(SummarizedExperiment::colData(x)))
            for (col in cols) SummarizedExperiment::colData(x)[[col]] <- NULL
            dims <- intersect(paste0(k, c("_membership", "_item_consensus")),
                              SingleCellExperiment::reducedDimNames(x))
            for (dim in dims) SingleCellExperiment::reducedDim(x, dim) <- NULL
            S4Vectors::metadata(x)[[k]] <- NULL
        }
        gone <- c(gone, stale)
    }
    if (length(gone)) {
        warning(warningCondition(
            paste0("removing ", paste(gone, collapse = ", "), ": results of the earlier run ",
                   "that this run replaces and does not write again; pass another name to ",
                   "keep them."), category = "UserWarning", class = "scconsensusWarning"))
    }
    x
}

# Whether nClusters asks pcc() or pla() for one result per K (a vector, or a list even of
# one K: Python's n_clusters=[4] stores "pcc_k4", where 4 alone replaces "pcc"), checked
# in R terms before any work, as is colLabels, which takes one labelling.
.check_each_k <- function(args, method, n, colLabels) {
    given <- args[["nClusters", exact = TRUE]]
    several <- method %in% c("pcc", "pla")
    k <- if (several && is.list(given)) unlist(given) else given
    if (!is.null(given) && !length(k)) {
        stop("nClusters is empty (an empty k_candidates means that no drop of the evidence ",
             "reached the threshold): give at least one number of clusters, or leave ",
             "nClusters out to choose it from the data.", call. = FALSE)
    }
    .check_n_clusters(k, n, if (method == "dpp") 1 else 2, several = several)
    each_k <- several && (length(k) > 1L || is.list(given))
    if (isTRUE(colLabels) && each_k) {
        stop("colLabels = TRUE stores one labelling, and nClusters = ", deparse(given),
             " fits one per K. Fit them, then choose one: colLabels(x) <- x$",
             .each_k_key(args, method, k[1]), ".", call. = FALSE)
    }
    each_k
}

# One matrix result per K, named by its key, each with what the call wrote for that K
# and what it wrote for all (`shared`, and anything no other K's key names).
.each_k_results <- function(keys, obs, obsm, uns, item_names, shared) {
    own <- function(nms, key) {
        (nms == key | startsWith(nms, paste0(key, "_"))) & !nms %in% shared
    }
    mine <- function(values, key) {
        nms <- names(values)
        others <- Reduce(`|`, lapply(setdiff(keys, key), own, nms = nms), logical(length(nms)))
        values[!others]
    }
    out <- lapply(keys, function(key) {
        .matrix_result(key, mine(obs, key), mine(obsm, key), mine(uns, key), item_names)
    })
    stats::setNames(out, keys)
}

# The result for a matrix input: labels, membership and confidence of `key` (NULL for
# ensemble()), and every per-item value, matrix and record written.
.matrix_result <- function(key, obs, obsm, uns, item_names) {
    out <- list()
    if (!is.null(key)) {
        out$labels <- stats::setNames(obs[[key]], item_names)
        out$membership <- obsm[[paste0(key, "_membership")]]
        conf <- paste0(key, "_confidence")
        if (!is.null(obs[[conf]])) out$confidence <- stats::setNames(obs[[conf]], item_names)
    }
    out$obs <- as.data.frame(lapply(obs, unname), row.names = item_names, optional = TRUE)
    out$obsm <- obsm
    out$uns <- uns
    # printed as a summary (a user trial's print() of 150 items ran to 1,839 lines)
    if (!is.null(key)) out <- structure(out, class = c("sccResult", "list"), key = key)
    out
}

#' @export
print.sccResult <- function(x, ...) {
    key <- attr(x, "key")
    method <- x$uns[[key]]$method
    sizes <- table(x$labels)
    cat("scconsensus ", if (is.null(method)) "" else paste0(method, " "), "result '", key,
        "': ", length(x$labels), " items in ", length(sizes), " clusters (sizes ",
        paste(sizes, collapse = ", "), ")", sep = "")
    unlabelled <- sum(is.na(x$labels))
    if (unlabelled) cat(", ", unlabelled, " unlabelled", sep = "")
    cat("\n")
    if (!is.null(x$confidence)) {
        q <- stats::quantile(x$confidence, c(0, 0.5), na.rm = TRUE, names = FALSE)
        cat("confidence: median ", format(q[2], digits = 3), ", lowest ",
            format(q[1], digits = 3), "\n", sep = "")
    }
    cat("$labels, $membership (", paste(dim(x$membership), collapse = " x "), "), ",
        "$confidence, $obs, $obsm, $uns\n", sep = "")
    invisible(x)
}

# A record's parameters in R terms: Python saw the values as its X (use_rep "X"), which
# are the matrix given, or `representation` of a SingleCellExperiment (use.dimred or
# assay.type; a user read use_rep "X" after use.dimred = "PCA").
.r_params <- function(record, representation) {
    params <- if (is.list(record)) record$params
    if (!is.list(params) || !identical(params$use_rep, "X")) return(record)
    params$use_rep <- NULL
    params$layer <- NULL
    record$params <- c(params, representation)
    record
}

# The name a K of several is stored under, as Python stores it: "<name>_k<K>".
.each_k_key <- function(args, method, k) {
    name <- args[["keyAdded", exact = TRUE]]
    paste0(if (is.null(name)) method else name, "_k", format(k, scientific = FALSE))
}

# Python's warnings and scanpy's log, in the order they arose, as R conditions that
# withCallingHandlers(), tryCatch(), suppressWarnings() and suppressMessages() handle:
# warnings of class "scconsensusWarning" (the Python category in `category`), and with
# verbose = TRUE the log's information as messages of class "scconsensusMessage".
.signal_conditions <- function(conditions, verbose) {
    for (cond in conditions) {
        text <- .py_message(cond$message)
        if (identical(cond$type, "warning")) {
            warning(warningCondition(text, category = cond$category,
                                     class = "scconsensusWarning"))
        } else if (isTRUE(verbose)) {
            message(structure(list(message = paste0(text, "\n"), call = NULL),
                              class = c("scconsensusMessage", "message", "condition")))
        }
    }
    invisible()
}

# The ensemble a method that reads one gets: `ensemble` as given, else the reducedDim
# of a SingleCellExperiment named by ensembleKey (`stored`), else NULL (Python builds
# one with ensembleArgs). `key` is the ensembleKey, NULL for methods without one.
.stored_ensemble <- function(method, x, args, ensemble, ensembleArgs, ensembleKeyGiven,
                             bridge) {
    takes_ensemble <- method != "ensemble" &&
        isTRUE(reticulate::py_to_r(.py_try(bridge$uses_ensemble(method))))
    if (!takes_ensemble) return(list(ensemble = ensemble, stored = NULL, key = NULL))
    key <- args[["ensembleKey", exact = TRUE]]
    if (is.null(key)) key <- "scc_ensemble"
    dimreds <- if (methods::is(x, "SingleCellExperiment")) {
        SingleCellExperiment::reducedDimNames(x)
    } else character(0)
    stored <- unused <- NULL
    if (is.null(ensemble) && key %in% dimreds) {
        # reuse an ensemble stored by ensemble(sce, name = key)
        ensemble <- SingleCellExperiment::reducedDim(x, key)
        # Python's -1 for "not sampled", as zellkonverter or to_sce keep it: R's NA
        if (is.numeric(ensemble)) ensemble[!is.na(ensemble) & ensemble < 0] <- NA
        stored <- key
        .refuse_joined(x, key, dimreds)
        if (length(ensembleArgs)) {
            unused <- paste0("ensembleArgs are not used: x already holds the ensemble ",
                             "reducedDim(x, '", key, "'), which ", method, "() reads. To ",
                             "build another, run ensemble(x, ..., name = 'other') and pass ",
                             "ensembleKey = 'other'.")
        }
    } else if (!is.null(ensemble) && key %in% dimreds) {
        # storing it would replace the stored one and leave that one's recipe behind
        stop("x holds an ensemble at reducedDim(x, '", key, "'), which the ensemble given ",
             "would replace: leave ensemble out to use the stored one, or pass ensembleKey = ",
             "'other' to store the given one beside it.", call. = FALSE)
    } else if (!is.null(ensemble) && length(ensembleArgs)) {
        unused <- paste0("ensembleArgs are not used: the ensemble given is the one ", method,
                         "() reads. Leave ensemble out to build one with ensembleArgs.")
    } else if (is.null(ensemble) && methods::is(x, "SummarizedExperiment") &&
               ensembleKeyGiven && !length(ensembleArgs)) {
        stop("ensembleKey = '", key, "' is not among reducedDimNames(x): ",
             .listed(dimreds), ". Store one with ensemble(x, name = '",
             key, "'), or pass ensembleArgs to build it.", call. = FALSE)
    }
    list(ensemble = ensemble, stored = stored, key = key, unused = unused)
}

# The results overwrite what scconsensus wrote before under their names, never the user's
# own columns or reducedDims (a user trial's ensemble(sce, name = "PCA") replaced the PCA,
# and pcc(sce, name = "sizeFactor") the size factors, without a word). scconsensus's own
# entries have a metadata record of their name (or of the result they belong to).
.refuse_foreign <- function(x, cols, dims) {
    ours <- names(S4Vectors::metadata(x))
    mine <- function(nm) any(nm == ours | startsWith(nm, paste0(ours, "_")))
    cols <- intersect(cols, names(SummarizedExperiment::colData(x)))
    dims <- intersect(dims, SingleCellExperiment::reducedDimNames(x))
    where <- c(sprintf("colData(x)$%s", cols), sprintf("reducedDim(x, '%s')", dims))
    foreign <- !vapply(c(cols, dims), mine, logical(1))
    if (any(foreign)) {
        stop("This would overwrite ", where[foreign][1], ", which scconsensus did not ",
             "write. Choose another name (name = ...).", call. = FALSE)
    }
}

# Python refuses an ensemble whose items come from separately built runs (e.g. cbind() of
# two SingleCellExperiments that each ran ensemble()): the same column holds unrelated
# partitions in each part. The run ids travel as reducedDim(x, "<key>_run").
.refuse_joined <- function(x, key, dimreds) {
    run <- paste0(key, "_run")
    if (!run %in% dimreds) return(invisible())
    n_runs <- length(unique(as.vector(SingleCellExperiment::reducedDim(x, run))))
    if (n_runs > 1L) {
        stop("reducedDim(x, '", key, "') joins ", n_runs, " ensembles built separately ",
             "(reducedDim(x, '", run, "') holds ", n_runs, " run ids; e.g. cbind() of ",
             "objects that each ran ensemble()): the partitions of one part are unrelated ",
             "to the same columns of another, so a consensus of them would be wrong. Run ",
             "ensemble() on the combined object, then the consensus again.", call. = FALSE)
    }
}

# Item names name the results: each one, once (a user trial's NA name failed only after
# the fit, inside data.frame()).
.check_item_names <- function(names) {
    if (is.null(names)) return(invisible())
    bad <- which(is.na(names) | names == "")
    if (length(bad)) {
        stop("x has ", length(bad), " missing or empty column name(s) (e.g. column ", bad[1],
             "); name every item, e.g. colnames(x) <- make.unique(colnames(x)), or drop ",
             "them all with colnames(x) <- NULL.", call. = FALSE)
    }
    if (anyDuplicated(names)) {
        dup <- names[anyDuplicated(names)]
        stop("x has duplicate column names (e.g. '", dup, "'); make them unique first, ",
             "e.g. colnames(x) <- make.unique(colnames(x)).", call. = FALSE)
    }
}

# A given ensemble with row names is matched to the items by name, as Bioconductor
# matches cells (a user trial's shuffled rows gave a random split without a word).
.rows_by_name <- function(ensemble, names) {
    if (is.null(ensemble) || is.null(names) || (is.list(ensemble) && !is.data.frame(ensemble)) ||
        (is.character(ensemble) && length(ensemble) == 1L)) {
        return(ensemble)  # nothing to match, or what .ensemble_spec refuses
    }
    rn <- rownames(ensemble)
    if (is.data.frame(ensemble) && .row_names_info(ensemble) < 0L) rn <- NULL  # 1, 2, ...
    if (is.null(rn) || length(rn) != length(names)) return(ensemble)  # .ensemble_spec says
    odd <- c(setdiff(rn, names), rn[duplicated(rn)], setdiff(names, rn))
    if (length(odd)) {
        stop("ensemble's row names are not x's column names (e.g. '", odd[1], "'): its ",
             "rows must be x's items. Match them, e.g. ensemble[colnames(x), ], or drop its ",
             "row names to take it in order.", call. = FALSE)
    }
    ensemble[match(names, rn), , drop = FALSE]  # its class kept: .ensemble_spec reads it
}

# A SummarizedExperiment comes back as a SingleCellExperiment: results need reducedDims
# (memberships, ensembles). Then a name holding another kind of record is refused.
.as_sce <- function(x, method, args) {
    if (methods::is(x, "SummarizedExperiment") && !methods::is(x, "SingleCellExperiment")) {
        x <- methods::as(x, "SingleCellExperiment")
    }
    .refuse_other_kind(x, method, args)
    x
}

# A name that holds another kind of scconsensus record is not replaced: an ensemble's
# (its recipe, which pcc() and nNull read), or a result's under ensemble()'s name.
.refuse_other_kind <- function(x, method, args) {
    name <- .result_name(args, method)
    if (!methods::is(x, "SingleCellExperiment")) return(invisible())
    ensemble_key <- args[["ensembleKey", exact = TRUE]]
    if (is.null(ensemble_key)) ensemble_key <- "scc_ensemble"
    if (method != "ensemble" && name == ensemble_key) {
        stop("name = '", name, "' is the ensemble's name (ensembleKey), which ", method,
             "() reads; choose another name.", call. = FALSE)
    }
    record <- S4Vectors::metadata(x)[[name]]
    if (is.null(record)) return(invisible())
    if (!is.list(record) || is.null(record[["params", exact = TRUE]])) {
        stop("name = '", name, "' holds an entry of metadata(x) that scconsensus did not ",
             "write; choose another name.", call. = FALSE)
    }
    # exact: $ would take a result's "partitions_used" for an ensemble's "partitions"
    is_ensemble <- !is.null(record[["partitions", exact = TRUE]])
    is_result <- !is.null(record[["method", exact = TRUE]])
    clash <- if (method == "ensemble") is_result else is_ensemble
    if (isTRUE(clash)) {
        what <- if (is_ensemble) "an ensemble" else paste0("a ", record[["method"]], " result")
        stop("name = '", name, "' holds ", what, " in metadata(x), which ", method,
             "() would replace; choose another name.", call. = FALSE)
    }
}

# Python numbers clusters from 0, R's labels run 1..k: the cluster consensus table of a
# consensus-k record too (a user trial joined it to the labels one off).
.one_based_clusters <- function(record) {
    cc <- if (is.list(record)) record[["cluster_consensus", exact = TRUE]]
    if (is.data.frame(cc) && "cluster" %in% names(cc)) {
        cc$cluster <- as.integer(cc$cluster) + 1L
        record[["cluster_consensus"]] <- cc
    }
    record
}

# The name a call writes under: name = (keyAdded), else its function's default.
.result_name <- function(args, method) {
    name <- args[["keyAdded", exact = TRUE]]
    if (is.null(name)) name <- if (method == "ensemble") "scc_ensemble" else method
    name
}
