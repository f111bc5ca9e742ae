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
    expect_match(null, "t(scale(t(x)))", fixed = TRUE)
    expect_no_match(null, "sc\\.pp|scc\\.pl|\\badata\\b")
})
