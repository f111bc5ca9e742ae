# Issue 27: a Bioconductor user's day (warnings, defaults, orientation, use.dimred,
# PCCParam). ALL is ConsensusClusterPlus's vignette data: 5,000 most variable probe sets.

all_5000 <- function() {
    skip_if_not_installed("ALL")
    env <- new.env()
    utils::data("ALL", package = "ALL", envir = env)
    d <- Biobase::exprs(env$ALL)
    d <- d[order(apply(d, 1, stats::mad), decreasing = TRUE)[1:5000], ]
    sweep(d, 1, apply(d, 1, stats::median))
}

# Every condition a call signals, muffled: list(warnings = , messages = ).
conditions_of <- function(expr) {
    out <- list(warnings = list(), messages = list())
    withCallingHandlers(expr,
        warning = function(w) {
            out$warnings[[length(out$warnings) + 1L]] <<- w
            invokeRestart("muffleWarning")
        },
        message = function(m) {
            out$messages[[length(out$messages) + 1L]] <<- m
            invokeRestart("muffleMessage")
        })
    out
}

test_that("Python's and scanpy's warnings are R warnings, information R messages (issue 27, item 1)", {
    skip_without_python()
    x <- two_groups()
    # K = 6 from 2-cluster partitions: Python warns (UserWarning) that few partitions fit K
    run <- function(...) pcc(x, nClusters = 6, ensembleArgs = list(nPartitions = 10, k = 2),
                             progress = FALSE, ...)
    got <- conditions_of(run())
    expect_length(got$messages, 0L)  # verbose = FALSE: no messages
    texts <- vapply(got$warnings, conditionMessage, "")
    expect_true(any(grepl("partition\\(s\\) have about 6 clusters", texts)))
    for (w in got$warnings) {
        expect_identical(class(w), c("scconsensusWarning", "warning", "condition"))
    }
    expect_silent(suppressWarnings(run()))
    # tryCatch by class stops at the first one
    caught <- tryCatch(run(), scconsensusWarning = function(w) w)
    expect_s3_class(caught, "scconsensusWarning")
    # verbose = TRUE: the log's information as messages of the package's class
    got <- conditions_of(run(verbose = TRUE))
    expect_true(any(grepl("running PCC", vapply(got$messages, conditionMessage, ""))))
    for (m in got$messages) {
        expect_identical(class(m), c("scconsensusMessage", "message", "condition"))
    }
    expect_silent(suppressMessages(suppressWarnings(run(verbose = TRUE))))
    # DPP's "the nearest is returned" is a warning too, and a Python UserWarning keeps
    # its category
    w <- tryCatch(dpp(x, nRuns = 20, nClusters = 9, progress = FALSE),
                  scconsensusWarning = function(w) w)
    expect_match(conditionMessage(w), "nClusters=9 asked")  # in R's name (item 8)
    expect_identical(w$category, "UserWarning")
    expect_error(pcc(x, verbose = NA), "verbose must be TRUE or FALSE")
})

test_that("every warning of a run on ALL is caught and silenced in R (issue 27, item 1)", {
    skip_without_python()
    d <- all_5000()
    run <- function() pcc(d, nClusters = 12, ensembleArgs = list(nPartitions = 10, k = 3),
                          progress = FALSE, verbose = TRUE)
    got <- conditions_of(run())
    expect_gte(length(got$warnings), 1L)
    expect_true(all(vapply(got$warnings, inherits, TRUE, "scconsensusWarning")))
    expect_true(all(vapply(got$messages, inherits, TRUE, "scconsensusMessage")))
    expect_silent(suppressMessages(suppressWarnings(run())))
})

test_that("ensemble() and pcc()'s own ensemble are one default ensemble (issue 27, item 2)", {
    skip_without_python()
    d <- all_5000()
    ens <- ensemble(d, progress = FALSE)
    res <- pcc(d, progress = FALSE)
    expect_identical(ens$labels, res$obsm$scc_ensemble)
    expect_identical(ens$uns$params$k, "auto")
    # and the consensus on ensemble()'s result is pcc()'s default one
    expect_identical(pcc(d, ensemble = ens$labels, progress = FALSE)$labels, res$labels)
    # every R default of a Python argument is NULL (Python's) or Python's own value;
    # progress is R's choice (bars only in an interactive session)
    for (fun in c("ensemble", "pcc", "pla", "dpp", "PCCParam", "PLAParam", "DPPParam")) {
        py <- scconsensusR:::.py_defaults(tolower(sub("Param$", "", fun)))
        f <- formals(get(fun, envir = asNamespace("scconsensusR")))
        for (nm in setdiff(intersect(names(f), names(py)), "progress")) {
            if (!is.null(f[[nm]])) expect_equal(eval(f[[nm]]), py[[nm]], label = paste(fun, nm))
        }
    }
})

test_that("a matrix named the other way round gets a warning naming t() (issue 27, item 3)", {
    skip_without_python()
    x <- two_groups()
    probes <- x
    rownames(probes) <- paste0(1000 + seq_len(nrow(x)), "_at")
    expect_silent(scconsensusR:::.check_orientation(probes, "columns", "pcc()"))
    w <- tryCatch(dpp(t(probes), nRuns = 5, progress = FALSE),
                  scconsensusOrientationWarning = function(w) w)
    expect_s3_class(w, "scconsensusWarning")
    expect_match(conditionMessage(w), "pass t\\(x\\)")
    expect_match(conditionMessage(w), "columns are named like features \\('1001_at'")
    # cell barcodes on the feature axis; a reducedDim given as it is
    cells <- x
    colnames(cells) <- paste0(vapply(1:40, function(i) paste(sample(c("A", "C", "G", "T"),
                                            16, TRUE), collapse = ""), ""), "-1")
    expect_warning(scconsensusR:::.check_orientation(t(cells), "columns", "pcc()"),
                   "rows are named like cells", class = "scconsensusOrientationWarning")
    pcs <- prcomp(t(x))$x[, 1:3]
    expect_warning(scconsensusR:::.check_orientation(pcs, "columns", "pcc()"),
                   "columns are named like features \\('PC1', 'PC2'\\)")
    expect_silent(scconsensusR:::.check_orientation(pcs, "rows", "clusterRows()"))
    # clusterRows takes items in rows: an assay as it is gets the warning, in its terms
    expect_warning(bluster::clusterRows(probes, DPPParam(nRuns = 5)),
                   "clusterRows\\(\\) takes items \\(cells, samples\\) in rows")
    expect_silent(bluster::clusterRows(t(probes), DPPParam(nRuns = 5)))
    # the help of every entry point states it
    for (topic in c("ensemble", "pcc", "pla", "dpp", "PCCParam")) {
        rd <- paste(capture.output(tools::Rd2txt(
            tools::Rd_db("scconsensusR")[[paste0(topic, ".Rd")]])), collapse = " ")
        expect_match(rd, "items in rows|features in rows", info = topic)
    }
})

test_that("pcc(sce) reuses the representation its stored ensemble was built on (issue 27, item 4)", {
    skip_without_python()
    x <- two_groups()
    sce <- SingleCellExperiment::SingleCellExperiment(assays = list(counts = x))
    SingleCellExperiment::reducedDim(sce, "PCA") <- prcomp(t(x))$x[, 1:3]
    sce <- ensemble(sce, nPartitions = 10, k = 2:3, use.dimred = "PCA", progress = FALSE)
    expect_identical(S4Vectors::metadata(sce)$scc_ensemble$representation,
                     list(use.dimred = "PCA"))
    out <- pcc(sce, nClusters = 2, progress = FALSE)  # no logcounts assay: PCA is used
    expect_gt(ari(out$pcc, truth), 0.95)
    again <- pcc(sce, nClusters = 2, use.dimred = "PCA", progress = FALSE)
    expect_identical(out$pcc, again$pcc)
    # a representation named in the call wins
    expect_error(pcc(sce, nClusters = 2, assay.type = "logcounts", progress = FALSE),
                 "assay.type = 'logcounts' is not among assayNames")
    # an ensemble pcc() builds itself is recorded too
    built <- pcc(sce[, ], ensembleKey = "e2", ensembleArgs = small_ensemble,
                 use.dimred = "PCA", progress = FALSE)
    expect_identical(S4Vectors::metadata(built)$e2$representation, list(use.dimred = "PCA"))
})

test_that("PCCParam refuses mistakes at construction; clusterRows takes a dgCMatrix (issue 27, item 5)", {
    skip_without_python()
    expect_error(PCCParam(nClusters = 5, n.clusters = 2), "same argument; give it once")
    expect_error(PCCParam(nClusterz = 3), "pcc\\(\\) has no argument 'nClusterz'")
    expect_error(PCCParam(nClusters = 0), "nClusters must be")
    expect_error(PLAParam(progress = "yes"), "progress must be TRUE or FALSE")
    expect_error(PCCParam(ensembleArgs = list(nPartitionz = 5)),
                 "ensemble\\(\\) has no argument 'nPartitionz'")
    expect_error(DPPParam(ensembleArgs = list()), "dpp\\(\\) has no argument 'ensembleArgs'")
    p <- PCCParam(nClusters = 3)
    expect_error(p[["nClusterz"]] <- 4, "no argument 'nClusterz'")
    # show() prints the unset arguments with the Python default they take
    expect_output(show(PCCParam()), "nClusters: \"auto\" \\(Python's default\\)")
    expect_output(show(DPPParam()), "nRuns: 200 \\(Python's default\\)")
    x <- t(two_groups())  # items in rows
    x[abs(x) < 1] <- 0
    sparse <- methods::as(x, "CsparseMatrix")
    expect_s4_class(sparse, "dgCMatrix")
    p <- PCCParam(nClusters = 2, ensembleArgs = small_ensemble)
    expect_identical(bluster::clusterRows(sparse, p), bluster::clusterRows(as.matrix(x), p))
})

test_that("messages use R names and R advice, and come before any work (issue 27, item 8)", {
    skip_without_python()
    x <- two_groups()
    na <- x
    na[1, 1:3] <- NA
    expect_error(pcc(na), "x has 3 missing \\(NA/NaN\\) or infinite value\\(s\\).*is.na\\(x\\)")
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = na))
    expect_error(ensemble(sce), "assay\\(x, 'logcounts'\\) has 3 missing")
    expect_error(dpp(x > 0), "x is logical.*x \\* 1")
    # nClusters too large: refused in R before the ensemble is built, worded once for all
    # no ensemble built first: with verbose = TRUE its log would be a message
    worked <- function(m) stop("an ensemble was built first: ", conditionMessage(m))
    err <- tryCatch(withCallingHandlers(pcc(x, nClusters = 200, verbose = TRUE),
                                        message = worked), error = conditionMessage)
    expect_match(err, "^nClusters = 200 is too large")
    for (f in list(pcc, pla, dpp)) {
        expect_error(f(x, nClusters = 200), "nClusters = 200 is too large for 40 items")
    }
    expect_error(pcc(x, nClusters = 2.5), "nClusters must be a whole number")
    # >= 2 as Python checks it (a user trial: 1 passed here, then Python refused it)
    expect_error(pcc(x, nClusters = 1), "nClusters must be a whole number >= 2")
    expect_error(PCCParam(nClusters = 1), "whole number >= 2")
    expect_error(pcc(x[, 1:2], nClusters = 2), "too large for 2 items: cluster at least 3 items")
    # dpp takes nClusters = 1 and up to one cluster per item, as Python does
    expect_no_error(scconsensusR:::.check_n_clusters(1, 40, 1))
    expect_no_error(scconsensusR:::.check_n_clusters(40, 40, 1))
    expect_error(scconsensusR:::.check_n_clusters(41, 40, 1), "choose nClusters <= 40")
    expect_true(methods::validObject(DPPParam(nClusters = 1)))
    sce <- SingleCellExperiment::SingleCellExperiment(list(counts = x))
    expect_error(pcc(sce, use.dimred = "PCA"), "reducedDimNames\\(x\\): \\(none\\)")
    # Python's names and ranges in warnings read as R's
    expect_identical(scconsensusR:::.r_terms("more partitions (n_partitions), e.g. k=(4, 8)"),
                     "more partitions (nPartitions), e.g. k = sccRange(4, 8)")
    expect_identical(scconsensusR:::.r_terms(".obsm['scc_ensemble']; k=1"),
                     ".obsm['scc_ensemble']; k=1")
    # names before "must", "is", "<" too (a user trial: "n_partitions must be a positive
    # integer", "choose max_k < 32" reached R as Python wrote them)
    expect_identical(scconsensusR:::.r_terms("n_partitions must be a positive integer"),
                     "nPartitions must be a positive integer")
    expect_identical(scconsensusR:::.r_terms("maxK=100 is too large; choose max_k < 32"),
                     "maxK=100 is too large; choose maxK < 32")
    # Python's 0-based positions 1-based, as R counts (a trial read "partition 0")
    expect_identical(scconsensusR:::.r_terms(paste0(
        "(partition 0: 3 for k=4); 2 item(s) (e.g. row 9) are constant; One feature of ",
        "adata.X (column 0) holds; n_clusters[2] must be")),
        paste0("(partition 1: 3 for k=4); 2 item(s) (e.g. item 10) are constant; One ",
               "feature of x (feature 1) holds; nClusters[3] must be"))
    expect_identical(scconsensusR:::.r_terms("max_k is the largest k tried: k = 2..max_k."),
                     "maxK is the largest k tried: k = 2..maxK.")
    # a quoted or dotted name is a key or an attribute, not an argument
    expect_identical(scconsensusR:::.r_terms("'n_runs is' and settings.dense_max is"),
                     "'n_runs is' and settings.dense_max is")
    expect_error(ensemble(x, nPartitions = 0), "^nPartitions must be")
    expect_identical(scconsensusR:::.r_terms("consensus_k() has no argument 'n'"),
                     "consensusK() has no argument 'n'")
})

test_that("Python's values, types and choices read as R's in messages", {
    expect_identical(
        scconsensusR:::.r_terms(paste("random_state must be None, an int, or a numpy",
                                      "Generator, got <class 'str'>.")),
        "randomState must be NULL or a whole number >= 0, got a character string.")
    expect_identical(scconsensusR:::.r_terms("weighted must be True or False, got 'yes'."),
                     "weighted must be TRUE or FALSE, got 'yes'.")
    expect_identical(
        scconsensusR:::.r_terms(paste("divergence='foo' is not supported; use 'kl', 'l2' or",
                                      "a scconsensus.core.Bregman instance (e.g.",
                                      "Bregman.power(1.5)).")),
        "divergence='foo' is not supported; use 'kl' or 'l2'.")
    expect_identical(
        scconsensusR:::.r_terms("sampler='x' is not supported; choose one of ['dpp', 'k++']."),
        "sampler='x' is not supported; choose one of c(\"dpp\", \"k++\").")
    # a list of numbers, or a key in brackets, stays
    expect_identical(scconsensusR:::.r_terms("n_clusters=[4, 8]; .obsm['a']"),
                     "nClusters=[4, 8]; .obsm['a']")
    skip_without_python()
    x <- two_groups()
    expect_error(pcc(x, randomState = "a"), "randomState must be NULL or a whole number")
    expect_error(pla(x, weighted = "yes"), "weighted must be TRUE or FALSE")
    expect_error(pcc(x, randomState = 1.5), "got a number that is not whole\\.")
    expect_error(pcc(x, divergence = "foo"), "use 'kl' or 'l2'\\.$")
    expect_error(pcc(x[0, ]), "^x has no features \\(0 rows; items are its columns")
    expect_error(pcc(x[, 0]), "^x has no items \\(0 columns")
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
    SingleCellExperiment::reducedDim(sce, "PCA") <- matrix(0, 40, 0)
    expect_error(pcc(sce, use.dimred = "PCA"),
                 "reducedDim\\(x, 'PCA'\\) has no features \\(0 columns; items are its rows")
})

test_that("consensusK() on ALL gives tl.consensus_k's statistics, and plots them (issue 27, item 6)", {
    skip_without_python()
    d <- all_5000()
    ck <- consensusK(d, maxK = 5, reps = 20, progress = FALSE)
    expect_s3_class(ck, c("sccConsensusK", "data.frame"))
    expect_identical(ck$k, 2:5)
    # the same call in Python, on the same matrix
    bridge <- scconsensusR:::.scc_bridge()
    adata <- bridge$make_adata(scconsensusR:::.matrix_spec(d, transpose = TRUE))
    tl <- reticulate::import("scconsensus.tl", convert = FALSE)
    tl$consensus_k(adata, max_k = 5L, reps = 20L, use_rep = "X", progress = FALSE)
    py <- reticulate::py_to_r(bridge$encode(adata$uns["consensus_k"]))
    expect_equal(ck$pac, unlist(py$pac$data))
    expect_equal(ck$area, unlist(py$area$data))
    expect_equal(ck$deltaArea, unlist(py$delta_area$data))
    expect_equal(attr(ck, "cdf"),
                 matrix(unlist(py$cdf$data), 4L, dimnames = list(2:5, NULL)))
    expect_identical(attr(ck, "bestK"), as.integer(py$best_k))
    expect_identical(attr(ck, "bestK"), ck$k[which.min(ck$pac)])
    labels <- attr(ck, "labels")
    expect_identical(dim(labels), c(128L, 4L))
    expect_identical(colnames(labels), paste0("k", 2:5))
    expect_true(all(apply(labels, 2, function(l) setequal(l, seq_len(max(l))))))
    # the three plots draw
    path <- tempfile(fileext = ".pdf")
    grDevices::pdf(path)
    expect_identical(plot(ck), ck)
    expect_error(plot(ck, which = "nope"), "should be one of")
    grDevices::dev.off()
    expect_gt(file.size(path), 1000)
})

test_that("consensusK() on a SingleCellExperiment stores the statistics (issue 27, item 6)", {
    skip_without_python()
    x <- two_groups()
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
    out <- consensusK(sce, maxK = 4, reps = 10, distance = "euclidean", progress = FALSE)
    direct <- consensusK(x, maxK = 4, reps = 10, distance = "euclidean", progress = FALSE)
    stats <- consensusKStats(out)
    expect_equal(as.data.frame(unclass(stats)), as.data.frame(unclass(direct))[names(stats)])
    expect_identical(attr(stats, "bestK"), 2L)  # two groups
    expect_gt(ari(out$consensus_k_k2, truth), 0.95)
    expect_error(consensusKStats(sce), "run x <- consensusK\\(x\\) first")
})

# A fourth user trial (a Bioconductor user, 2026-11-27).

test_that("cbind() of two ensembles is refused in R, as ad.concat is in Python", {
    skip_without_python()
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = two_groups()))
    a <- ensemble(sce[, 1:20], nPartitions = 8, k = 2, progress = FALSE)
    b <- ensemble(sce[, 21:40], nPartitions = 8, k = 2, progress = FALSE)
    expect_error(pcc(SummarizedExperiment::cbind(a, b), nClusters = 2),
                 "joins 2 ensembles built separately.*ensemble\\(\\) on the combined")
    # one run: used, and ensembleArgs that cannot apply are said to be unused
    one <- ensemble(sce, nPartitions = 8, k = 2, progress = FALSE)
    expect_warning(out <- pcc(one, nClusters = 2, ensembleArgs = list(nPartitions = 80)),
                   "ensembleArgs are not used")
    expect_identical(ncol(SingleCellExperiment::reducedDim(out, "scc_ensemble")), 8L)
    # a trial: a plain simpleWarning, and said before an error about use.dimred
    expect_warning(pcc(one, nClusters = 2, ensembleArgs = list(nPartitions = 80)),
                   class = "scconsensusWarning")
    warned <- FALSE
    expect_error(withCallingHandlers(
        pcc(one, nClusters = 2, use.dimred = "UMAP", ensembleArgs = list(nPartitions = 80)),
        warning = function(w) warned <<- TRUE), "reducedDimNames")
    expect_false(warned)
})

test_that("an ensemble given by hand holds cluster ids, NA for unsampled", {
    skip_without_python()
    x <- two_groups()
    e <- ensemble(x, nPartitions = 8, k = 2, progress = FALSE)$labels
    e[1, 1] <- NA
    e2 <- e
    e2[is.na(e2)] <- -1L
    expect_error(pcc(x, ensemble = e2, nClusters = 2), "negative values.*with NA, not -1")
    embedding <- prcomp(t(x), rank. = 3)$x
    expect_error(pcc(x, ensemble = embedding, nClusters = 2), "non-integer values.*ensembleKey")
    expect_error(pcc(x, ensemble = "scc_ensemble"), "is a name; .*ensembleKey = 'scc_ensemble'")
    expect_identical(length(pcc(x, ensemble = e, nClusters = 2)$labels), 40L)
})

test_that("Python's input arguments are refused with R's, and not listed", {
    skip_without_python()
    x <- two_groups()
    expect_error(ensemble(x, layer = "counts"), "layer is how Python chooses.*assay.type")
    expect_error(pcc(x, useRep = "PCA"), "useRep is how Python chooses.*use.dimred")
    err <- tryCatch(pcc(x, foo = 1), error = conditionMessage)
    expect_match(err, "has no argument 'foo'")
    expect_no_match(err, "useRep|layer|client|obsp|neighborsKey|keyAdded")
    expect_match(err, "name\\.?$")
})

test_that("consensusK() on a SingleCellExperiment names its label and item-consensus columns", {
    skip_without_python()
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = two_groups()))
    out <- consensusK(sce, maxK = 4, reps = 10, distance = "euclidean", keepK = "all",
                      progress = FALSE)
    labels <- SingleCellExperiment::reducedDim(out, "consensus_k_labels")
    expect_identical(colnames(labels), paste0("k", 2:4))
    expect_true(is.integer(labels) && min(labels) == 1L)
    item <- SingleCellExperiment::reducedDim(out, "consensus_k_k3_item_consensus")
    expect_identical(colnames(item), as.character(1:3))
    # column j is label j's: the items labelled j are most with cluster j (an item alone
    # in its cluster counts 1 there, not NA)
    expect_false(anyNA(item))
    own <- item[cbind(seq_len(nrow(item)), as.integer(out$consensus_k_k3))]
    expect_true(all(own >= apply(item, 1, max) - 1e-12))
})

test_that("Python's advice reaches R in R's terms", {
    terms <- scconsensusR:::.r_terms
    raw <- paste0("adata.X looks like raw counts (integers up to 200): cells would be ",
                  "compared by library size. Normalise and log-transform first ",
                  "(sc.pp.normalize_total, sc.pp.log1p), and cluster a PCA (sc.pp.pca; ",
                  "X_pca is then used), or pass use_rep, or a layer of normalised values.")
    for (text in c(raw, sub("or a layer", "or another layer", raw, fixed = TRUE))) {
        said <- terms(text)
        expect_match(said, "^x looks like raw counts", perl = TRUE)
        expect_match(said, "scuttle::logNormCounts(x), then assay.type = \"logcounts\"",
                     fixed = TRUE)
        expect_no_match(said, "sc\\.pp|use_rep|useRep|layer")
    }
    expect_identical(terms("Generate the ensemble with predict_unsampled=True or more partitions"),
                     "Generate the ensemble with predictUnsampled = TRUE or more partitions")
    expect_identical(terms("Build the ensemble over several k (tl.ensemble's default k='auto')"),
                     "Build the ensemble over several k (ensemble()'s default k='auto')")
    said <- terms(paste0("select_k: no number of clusters is stable. Look at pl.k_selection, ",
                         "and give the number of clusters if the biology sets one."))
    expect_match(said, "give nClusters if the biology sets one", fixed = TRUE)
    expect_no_match(said, "pl\\.k_selection")
    expect_identical(terms("run scc.tl.pcc(adata, key_added='pcc') again"),
                     "run pcc(x, name='pcc') again")
})

test_that("one feature on its own scale is named, and a reducedDim is no such matrix", {
    skip_without_python()
    x <- two_groups()
    x["g3", ] <- x["g3", ] * 1000
    expect_warning(ensemble(x, nPartitions = 4, k = 2),
                   "One feature of x \\('g3'\\) holds .* scale them first \\(e.g. t\\(scale")
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = two_groups()))
    pcs <- prcomp(t(two_groups()), rank. = 4)$x
    pcs[, "PC1"] <- pcs[, "PC1"] * 20  # the first component holds most of the variance
    SingleCellExperiment::reducedDim(sce, "PCA") <- pcs
    caught <- conditions_of(ensemble(sce, use.dimred = "PCA", nPartitions = 4, k = 2))
    expect_false(any(grepl("One feature", vapply(caught$warnings, conditionMessage, ""))))
    caught <- conditions_of(bluster::clusterRows(pcs, PCCParam(nClusters = 2)))
    expect_false(any(grepl("One feature", vapply(caught$warnings, conditionMessage, ""))))
})

test_that("a result prints as a summary, and is still a list", {
    skip_without_python()
    res <- pcc(two_groups(), nClusters = 2, ensembleArgs = list(nPartitions = 6, k = 2))
    expect_s3_class(res, "sccResult")
    expect_true(is.list(res) && is.factor(res$labels))
    printed <- capture.output(print(res))
    expect_lte(length(printed), 4L)
    expect_match(printed[1], "scconsensus pcc result 'pcc': 40 items in 2 clusters \\(sizes 20, 20\\)")
    expect_match(printed[2], "^confidence: median ")
})

test_that("results never overwrite the user's own colData or reducedDims", {
    skip_without_python()
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = two_groups()))
    SingleCellExperiment::reducedDim(sce, "PCA") <- prcomp(t(two_groups()), rank. = 3)$x
    sce$sizeFactor <- runif(40)
    # refused before the run: Python would have refused subsample = 5 first
    expect_error(ensemble(sce, name = "PCA", nPartitions = 4, k = 2, subsample = 5),
                 "overwrite reducedDim\\(x, 'PCA'\\), which scconsensus did not write")
    built <- ensemble(sce, nPartitions = 4, k = 2)
    expect_error(pcc(built, nClusters = 2, name = "sizeFactor"),
                 "overwrite colData\\(x\\)\\$sizeFactor, which scconsensus did not write")
    # its own results it replaces, as Python does
    once <- pcc(built, nClusters = 2)
    twice <- pcc(once, nClusters = 2, randomState = 1)
    expect_identical(ncol(SingleCellExperiment::reducedDim(twice, "pcc_membership")), 2L)
})

test_that("a transposed matrix of simulated 'gene1' x 'cell1' names is noticed", {
    m <- matrix(rnorm(60), 6, dimnames = list(paste0("gene", 1:6), paste0("cell", 1:10)))
    expect_silent(scconsensusR:::.check_orientation(m, "columns", "pcc()"))
    expect_warning(scconsensusR:::.check_orientation(t(m), "columns", "pcc()"),
                   class = "scconsensusOrientationWarning")
})

test_that("a stored ensemble with Python's -1 is read as NA; unused ensembleArgs are said", {
    skip_without_python()
    x <- two_groups()
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
    e <- ensemble(x, nPartitions = 6, k = 2, progress = FALSE)$labels
    e[1:3, 1] <- NA
    py <- e - 1L  # as zellkonverter reads a Python-built ensemble: 0..k-1, -1 unsampled
    py[is.na(py)] <- -1L
    SingleCellExperiment::reducedDim(sce, "scc_ensemble") <- py
    out <- pcc(sce, nClusters = 2)
    expect_gt(ari(out$pcc, truth), 0.95)
    expect_warning(pcc(x, ensemble = e, nClusters = 2, ensembleArgs = list(nPartitions = 80)),
                   "ensembleArgs are not used: the ensemble given", class = "scconsensusWarning")
})
