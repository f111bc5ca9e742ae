# Issue 14, Bioconductor side: README sequence, ensembleKey, conventions.

make_sce <- function() {
    x <- two_groups()
    sce <- SingleCellExperiment::SingleCellExperiment(assays = list(logcounts = x))
    SingleCellExperiment::reducedDim(sce, "PCA") <- prcomp(t(x))$x[, 1:3]
    sce
}

test_that("ensemble(sce) then dpp(sce): the stored ensemble goes only to methods that take one (item 1)", {
    skip_without_python()
    sce <- ensemble(make_sce(), nPartitions = 10, k = 2:3, use.dimred = "PCA",
                    progress = FALSE)
    sce <- dpp(sce, nRuns = 20, use.dimred = "PCA", progress = FALSE)
    expect_gt(ari(sce$dpp, truth), 0.95)
    sce <- pla(sce, nClusters = 2, progress = FALSE)
    expect_gt(ari(sce$pla, truth), 0.95)
    # an explicit ensemble for dpp is still an error
    expect_error(dpp(make_sce(), ensemble = matrix(1L, 40, 2)), "no argument 'ensemble'")
})

test_that("ensembleKey picks the stored ensemble and is recorded truthfully (item 2)", {
    skip_without_python()
    sce <- ensemble(make_sce(), nPartitions = 10, k = 2, use.dimred = "PCA",
                    name = "ens_k2", progress = FALSE)
    sce <- ensemble(sce, nPartitions = 10, k = 5, use.dimred = "PCA", progress = FALSE)
    expect_true(all(c("ens_k2", "scc_ensemble") %in% SingleCellExperiment::reducedDimNames(sce)))
    expect_equal(S4Vectors::metadata(sce)$ens_k2$params$k, 2L)
    out <- pcc(sce, nClusters = 6, ensembleKey = "ens_k2", progress = FALSE)
    expect_equal(S4Vectors::metadata(out)$pcc$params$ensemble_key, "ens_k2")
    # the result is the one from ens_k2 (given explicitly), not from scc_ensemble
    ens <- SingleCellExperiment::reducedDim(sce, "ens_k2")
    direct <- pcc(make_sce(), nClusters = 6, ensemble = ens, progress = FALSE)
    expect_identical(out$pcc, direct$pcc)
    other <- pcc(sce, nClusters = 6, progress = FALSE)
    expect_false(isTRUE(all.equal(
        SingleCellExperiment::reducedDim(other, "pcc_membership"),
        SingleCellExperiment::reducedDim(out, "pcc_membership"))))
    # the stored ensembles are left as they were
    expect_identical(SingleCellExperiment::reducedDim(out, "ens_k2"), ens)
    # snake_case spelling and pla too
    out <- pla(sce, nClusters = 2, ensemble_key = "ens_k2", progress = FALSE)
    expect_equal(S4Vectors::metadata(out)$pla$params$ensemble_key, "ens_k2")
    expect_error(pcc(sce, ensembleKey = "nope"),
                 "ensembleKey = 'nope' is not among reducedDimNames\\(x\\)")
    # a SummarizedExperiment has no reducedDims: an R error naming the fix, not an S4 one
    se <- SummarizedExperiment::SummarizedExperiment(assays = list(logcounts = two_groups()))
    expect_error(pcc(se, use.dimred = "PCA"),
                 "use.dimred needs a SingleCellExperiment.*SummarizedExperiment")
    # a key not stored yet, with ensembleArgs: built and stored under that key
    out <- pcc(make_sce(), nClusters = 2, ensembleKey = "mine",
               ensembleArgs = list(nPartitions = 5, k = 2), progress = FALSE)
    expect_equal(dim(SingleCellExperiment::reducedDim(out, "mine")), c(40L, 5L))
})

test_that("labels are 1..k without empty levels, memberships named alike (item 5)", {
    skip_without_python()
    x <- two_groups()
    res <- pcc(x, nClusters = 6, ensembleArgs = small_ensemble, progress = FALSE)
    k <- nlevels(res$labels)
    expect_identical(levels(res$labels), as.character(seq_len(k)))
    expect_true(all(table(res$labels) > 0))
    expect_identical(colnames(res$membership), as.character(seq_len(ncol(res$membership))))
    # label j is membership column j
    expect_identical(as.character(res$labels),
                     colnames(res$membership)[apply(res$membership, 1, which.max)])
    expect_equal(unname(rowSums(res$membership)), rep(1, 40), tolerance = 1e-8)
    for (r in list(pla(x, nClusters = 3, ensembleArgs = small_ensemble,
                       progress = FALSE),
                   dpp(x, nRuns = 20, progress = FALSE))) {
        expect_identical(levels(r$labels), as.character(seq_len(nlevels(r$labels))))
        expect_true(all(table(r$labels) > 0))
    }
    # ensembles: labels 1..k per partition, NA = left out, partitions named
    ens <- ensemble(x, nPartitions = 5, k = 3, progress = FALSE)$labels
    expect_equal(colnames(ens), paste0("p", 1:5))
    expect_true(all(apply(ens, 2, function(p) setequal(p[!is.na(p)], 1:3))))
    # any labels are accepted as an ensemble (factors, 0-based, strings)
    a <- pcc(x, nClusters = 3, ensemble = ens, progress = FALSE)
    b <- pcc(x, nClusters = 3, ensemble = ens - 1L, progress = FALSE)
    lab <- matrix(letters[ens], nrow = 40)
    cc <- pcc(x, nClusters = 3, ensemble = lab, progress = FALSE)
    expect_identical(a$labels, b$labels)
    expect_identical(a$labels, cc$labels)
})

test_that("SingleCellExperiment: colLabels on request, named membership columns, name= on ensemble (item 5)", {
    skip_without_python()
    sce <- make_sce()
    out <- pcc(sce, nClusters = 3, ensembleArgs = small_ensemble, progress = FALSE)
    expect_null(SingleCellExperiment::colLabels(out, onAbsence = "none"))
    out <- pcc(sce, nClusters = 3, ensembleArgs = small_ensemble, colLabels = TRUE,
               progress = FALSE)
    expect_identical(SingleCellExperiment::colLabels(out), out$pcc)
    expect_identical(levels(out$pcc), as.character(seq_len(nlevels(out$pcc))))
    memb <- SingleCellExperiment::reducedDim(out, "pcc_membership")
    expect_identical(colnames(memb), as.character(seq_len(ncol(memb))))
    expect_equal(rownames(memb), colnames(sce))
    # the built ensemble is kept as a reducedDim with its metadata
    ens <- SingleCellExperiment::reducedDim(out, "scc_ensemble")
    expect_equal(dim(ens), c(40L, 12L))
    expect_equal(nrow(S4Vectors::metadata(out)$scc_ensemble$partitions), 12L)
    out <- ensemble(sce, nPartitions = 4, k = 2, name = "myEns", use.dimred = "PCA",
                    progress = FALSE)
    expect_true("myEns" %in% SingleCellExperiment::reducedDimNames(out))
    expect_true("myEns" %in% names(S4Vectors::metadata(out)))
    expect_error(pcc(two_groups(), colLabels = TRUE), "needs a SingleCellExperiment")
})

test_that("Python warnings are R warnings; errors have no Python prefix (item 5)", {
    skip_without_python()
    x <- two_groups()
    ens <- ensemble(x, nPartitions = 6, k = 2, progress = FALSE)$labels
    ens[1, ] <- NA  # item 1 in no partition
    expect_warning(pla(x, nClusters = 2, ensemble = ens, progress = FALSE),
                   "1 item\\(s\\) are in no partition")
    err <- tryCatch(pcc(x, nClusters = 2, nInit = 0, ensembleArgs = small_ensemble,
                        progress = FALSE), error = conditionMessage)
    # the message itself, with no Python prefix, its argument named as R names it
    # (nClusters = 1, which Python refused here, is now R's own check)
    expect_match(err, "^nInit must be a positive integer, got 0\\.$")
    err <- tryCatch(pcc(x, divergence = "nosuch", ensembleArgs = small_ensemble),
                    error = conditionMessage)
    expect_no_match(err, "^[A-Za-z]*Error:|\n$")
})

test_that("progress = FALSE writes nothing, progress = TRUE shows bars (item 5)", {
    skip_without_python()
    x <- two_groups()
    # the bars are written by Python to the process' standard error: run in a child R
    run <- function(progress) {
        script <- tempfile(fileext = ".R")
        writeLines(c(
            sprintf(".libPaths(%s)", paste(deparse(.libPaths()), collapse = "")),
            "suppressPackageStartupMessages(library(scconsensusR))",
            "x <- matrix(rnorm(400), 10)",
            sprintf("invisible(ensemble(x, nPartitions = 25, k = 2, progress = %s))", progress),
            sprintf("invisible(dpp(x, nRuns = 20, progress = %s))", progress)), script)
        err <- tempfile()
        status <- system2(file.path(R.home("bin"), "Rscript"), script, stdout = FALSE,
                          stderr = err)
        expect_equal(status, 0L)
        paste(readLines(err, warn = FALSE), collapse = "\n")
    }
    expect_identical(run(FALSE), "")
    expect_match(run(TRUE), "ensemble|runs")
})

test_that("duplicate item names are refused before the run (item 5)", {
    skip_without_python()
    x <- two_groups()
    colnames(x)[2] <- "c1"
    started <- Sys.time()
    expect_error(pcc(x, ensembleArgs = small_ensemble), "duplicate column names \\(e.g. 'c1'\\)")
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
    expect_error(dpp(sce, nRuns = 5), "duplicate column names")
    expect_error(ensemble(x, nPartitions = 3, k = 2), "make.unique")
    expect_lt(as.numeric(Sys.time() - started, units = "secs"), 5)
})

test_that("one vocabulary with Python: method= (methods= warns for one release)", {
    skip_without_python()
    x <- two_groups()
    ens <- ensemble(x, nPartitions = 4, method = c("kmeans", "hc"), k = 2, progress = FALSE)
    expect_equal(unlist(ens$uns$params$method), c("kmeans", "hc"))
    expect_warning(old <- ensemble(x, nPartitions = 4, methods = c("kmeans", "hc"), k = 2,
                                   progress = FALSE),
                   "methods= is now method=")
    expect_identical(old$labels, ens$labels)
})
