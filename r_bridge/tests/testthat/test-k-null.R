# nNull: tl.k_null after pcc() or pla(), K against reference data without groups

test_that("nNull compares K with data without groups, on a matrix and a stored ensemble", {
    skip_without_python()
    x <- two_groups()
    res <- pcc(x, nNull = 2, randomState = 0, ensembleArgs = list(nPartitions = 30))
    expect_true(is.data.frame(res$uns$pcc$k_null))
    expect_true(all(c("eigenvalue", "null_max", "ratio") %in% names(res$uns$pcc$k_null)))
    expect_gt(res$uns$pcc$k_null_ratio, 1.5)
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
    sce <- ensemble(sce, nPartitions = 30)
    sce <- pla(sce, nClusters = 2, nNull = 2)
    expect_true(is.data.frame(S4Vectors::metadata(sce)$pla$k_null))
    expect_gt(S4Vectors::metadata(sce)$pla$k_null_ratio, 1.5)
})

test_that("nNull is refused where there is no recipe to rebuild, before any work", {
    skip_without_python()
    x <- two_groups()
    labels <- ensemble(x, nPartitions = 20)$labels
    expect_error(pcc(x, nNull = 2, ensemble = labels), "needs its recipe")
    expect_error(dpp(x, nNull = 2), "pcc() and pla()", fixed = TRUE)
    expect_error(pcc(x, nNull = c(2, 3)), "one whole number (0: off), got 2 values", fixed = TRUE)
    expect_error(bluster::clusterRows(t(x), PCCParam(nNull = 2)), "clusterRows() returns labels",
                 fixed = TRUE)
    off <- suppressWarnings(pcc(x, nNull = 0, ensembleArgs = list(nPartitions = 20)))  # off
    expect_null(off$uns$pcc$k_null)
})

test_that("nNull's advice is R's", {
    skip_without_python()
    said <- scconsensusR:::.py_message(paste0(
        "tl.k_null: the 2 clusters of 'pcc' are hardly more stable than in data without ",
        "groups. One feature holds 99% of the variance: scale the features (sc.pp.scale) or ",
        "cluster a representation (sc.pp.pca). Look at scc.pl.k_selection(adata, 'pcc')."))
    expect_match(said, "^nNull: ")
    expect_match(said, "One feature holds 99% of the variance: scale the features (e.g. ",
                 fixed = TRUE)
    expect_match(said, "Look at k_null in the result's record (metadata(x) or $uns).",
                 fixed = TRUE)
    expect_no_match(said, "sc\\.pp|scc\\.pl|\\badata\\b")
    wide <- scconsensusR:::.py_message(paste0(
        "ValueError: The reference data are drawn ... Build the ensemble on a representation ",
        "(sc.pp.pca, then tl.ensemble(adata, use_rep='X_pca'))."))
    expect_match(wide, "scater::runPCA(x), then use.dimred = \"PCA\")", fixed = TRUE)
})

test_that("nNull's warning on data without groups speaks R", {
    skip_without_python()
    set.seed(1)
    x <- matrix(rnorm(10 * 300), 10, dimnames = list(paste0("g", 1:10), paste0("c", 1:300)))
    said <- character(0)
    withCallingHandlers(
        pcc(x, nNull = 2, randomState = 0),
        scconsensusWarning = function(w) {
            said <<- c(said, conditionMessage(w))
            invokeRestart("muffleWarning")
        }
    )
    null <- grep("^nNull: ", said, value = TRUE)
    expect_length(null, 1)
    expect_match(null, "stable than in data without groups", fixed = TRUE)
    expect_no_match(null, "sc\\.pp|scc\\.pl|\\badata\\b")
})
