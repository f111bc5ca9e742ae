# Issue 14, item 6: bluster integration.

test_that("clusterRows(t(x), PCCParam(nClusters = 4)) gives a factor with levels 1..k", {
    skip_without_python()
    x <- two_groups()
    p <- PCCParam(nClusters = 4, ensembleArgs = small_ensemble)
    expect_s4_class(p, "BlusterParam")
    expect_s4_class(p, "PCCParam")
    cl <- bluster::clusterRows(t(x), p)
    expect_s3_class(cl, "factor")
    expect_length(cl, 40L)
    expect_identical(levels(cl), as.character(seq_len(nlevels(cl))))
    expect_true(nlevels(cl) <= 4L && all(table(cl) > 0))
    expect_gt(purity(cl, truth), 0.95)
    # the same as pcc() with those arguments
    direct <- pcc(x, nClusters = 4, ensembleArgs = small_ensemble, progress = FALSE)
    expect_identical(cl, unname(direct$labels))
    full <- bluster::clusterRows(t(x), p, full = TRUE)
    expect_identical(full$clusters, cl)
    expect_equal(dim(full$objects$membership), dim(direct$membership))
    expect_equal(full$objects$uns$pcc$params$n_clusters, 4L)
    expect_output(show(p), "class: PCCParam.*nClusters: 4")
})

test_that("PLAParam and DPPParam with clusterRows, and [[ / [[<- on any argument", {
    skip_without_python()
    x <- two_groups()
    cl <- bluster::clusterRows(t(x), PLAParam(nClusters = 2,
                                              ensembleArgs = small_ensemble))
    expect_identical(levels(cl), c("1", "2"))
    expect_gt(ari(cl, truth), 0.95)
    p <- DPPParam(nRuns = 20)
    cl <- bluster::clusterRows(t(x), p)
    expect_gt(ari(cl, truth), 0.95)
    expect_s4_class(p, "BlusterParam")
    expect_equal(p[["nRuns"]], 20)
    p[["n_runs"]] <- 30
    expect_equal(p[["nRuns"]], 30)
    p[["tau"]] <- 0.5
    expect_equal(p[["tau"]], 0.5)
    expect_equal(PCCParam(n_clusters = 3)[["nClusters"]], 3)
})

test_that("clusterSweep varies the arguments", {
    skip_without_python()
    x <- two_groups()
    sweep <- bluster::clusterSweep(t(x), PCCParam(ensembleArgs = small_ensemble),
                                   nClusters = 2:3, randomState = c(0L, 1L))
    expect_equal(nrow(sweep$parameters), 4L)
    expect_equal(ncol(sweep$clusters), 4L)
    for (cl in as.list(sweep$clusters)) {
        expect_identical(levels(cl), as.character(seq_len(nlevels(cl))))
        expect_gt(purity(cl, truth), 0.95)  # nClusters = 3 may split a group, never mix two
    }
})

test_that("scran::clusterCells runs the Params on a SingleCellExperiment", {
    skip_without_python()
    skip_if_not_installed("scran")
    x <- two_groups()
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
    SingleCellExperiment::reducedDim(sce, "PCA") <- prcomp(t(x))$x[, 1:3]
    cl <- scran::clusterCells(sce, use.dimred = "PCA",
                              BLUSPARAM = PCCParam(nClusters = 4, ensembleArgs = small_ensemble))
    expect_s3_class(cl, "factor")
    expect_gt(purity(cl, truth), 0.95)
    cl <- scran::clusterCells(sce, assay.type = "logcounts", BLUSPARAM = DPPParam(nRuns = 20))
    expect_gt(ari(cl, truth), 0.95)
})
