make_sce <- function() {
    x <- two_groups()
    sce <- SingleCellExperiment::SingleCellExperiment(assays = list(logcounts = x))
    SingleCellExperiment::reducedDim(sce, "PCA") <- prcomp(t(x))$x[, 1:3]
    sce
}

test_that("pcc() on a SingleCellExperiment fills colData, reducedDims and metadata", {
    skip_without_python()
    sce <- make_sce()
    out <- pcc(sce, nClusters = 3, ensembleArgs = small_ensemble)
    expect_s4_class(out, "SingleCellExperiment")
    expect_equal(dim(out), dim(sce))
    expect_s3_class(out$pcc, "factor")
    expect_gt(purity(out$pcc, truth), 0.95)  # nClusters = 3 may split a group, never mix two
    expect_true(all(c("pcc_confidence", "pcc_entropy") %in% names(SummarizedExperiment::colData(out))))
    memb <- SingleCellExperiment::reducedDim(out, "pcc_membership")
    expect_equal(rownames(memb), colnames(sce))
    expect_equal(unname(rowSums(memb)), rep(1, 40), tolerance = 1e-8)
    expect_true("scc_ensemble" %in% SingleCellExperiment::reducedDimNames(out))
    expect_equal(S4Vectors::metadata(out)$pcc$params$n_clusters, 3L)
    # the parameters name the input in R terms, not as Python's X (a user trial)
    expect_null(S4Vectors::metadata(out)$pcc$params$use_rep)
    expect_equal(S4Vectors::metadata(out)$pcc$params$assay.type, "logcounts")
    on_pca <- pla(sce, nClusters = 2, use.dimred = "PCA", ensembleArgs = small_ensemble)
    expect_equal(S4Vectors::metadata(on_pca)$pla$params$use.dimred, "PCA")
    expect_equal(S4Vectors::metadata(on_pca)$scc_ensemble$params$use.dimred, "PCA")
    expect_null(pcc(two_groups(), nClusters = 2, ensembleArgs = small_ensemble,
                    progress = FALSE)$uns$pcc$params$use_rep)
    # The input object is unchanged (R copy semantics).
    expect_false("pcc" %in% names(SummarizedExperiment::colData(sce)))
})

test_that("ensemble(sce) is stored and reused; name, assay.type and use.dimred work", {
    skip_without_python()
    sce <- ensemble(make_sce(), nPartitions = 10, k = c(2, 3), use.dimred = "PCA")
    ens <- SingleCellExperiment::reducedDim(sce, "scc_ensemble")
    expect_equal(dim(ens), c(40L, 10L))
    out <- pla(sce, nClusters = 2, name = "myPla")
    expect_true("myPla" %in% names(SummarizedExperiment::colData(out)))
    expect_true("myPla_membership" %in% SingleCellExperiment::reducedDimNames(out))
    # the stored ensemble was reused, not rebuilt
    expect_identical(SingleCellExperiment::reducedDim(out, "scc_ensemble"), ens)
    expect_error(pcc(make_sce(), assay.type = "counts"),
                 "assay.type = 'counts' is not among assayNames\\(x\\): logcounts")
    expect_error(pcc(make_sce(), use.dimred = "UMAP"), "not among reducedDimNames")
})

test_that("dpp() on a SingleCellExperiment", {
    skip_without_python()
    out <- dpp(make_sce(), nRuns = 30, use.dimred = "PCA")
    expect_s3_class(out$dpp, "factor")
    expect_gt(ari(out$dpp, truth), 0.95)
})
