test_that("ensemble() on a matrix gives items x partitions labels with NA", {
    skip_without_python()
    x <- two_groups()
    ens <- ensemble(x, nPartitions = 15, k = c(2, 4), subsample = 0.8)
    expect_true(is.integer(ens$labels))
    expect_equal(dim(ens$labels), c(40L, 15L))
    expect_equal(rownames(ens$labels), colnames(x))
    expect_true(anyNA(ens$labels))  # 20% of items left out of each partition
    expect_equal(colSums(!is.na(ens$labels)), rep(32, 15), ignore_attr = TRUE)
    expect_identical(ens$uns$params$n_partitions, 15L)
    expect_equal(ens$uns$params$k, c(2L, 4L))
})

test_that("pcc() on a matrix recovers the groups with memberships on the simplex", {
    skip_without_python()
    x <- two_groups()
    res <- pcc(x, nClusters = 4, ensembleArgs = small_ensemble)
    expect_s3_class(res$labels, "factor")
    expect_equal(names(res$labels), colnames(x))
    expect_equal(nrow(res$membership), 40L)
    expect_equal(unname(rowSums(res$membership)), rep(1, 40), tolerance = 1e-8)
    expect_true(all(res$membership >= 0))
    # the ensemble's agreement with each item's label, in [0, 1]
    expect_true(all(res$confidence >= 0 & res$confidence <= 1))
    expect_gt(stats::median(res$confidence), 0.5)
    expect_gt(purity(res$labels, truth), 0.95)
    expect_equal(res$uns$pcc$params$n_clusters, 4L)
    # a table with pandas' default index gets R's row names 1..n, not "0", "1", ...
    res <- pcc(x, ensembleArgs = small_ensemble, progress = FALSE)
    ks <- res$uns$pcc$k_selection
    expect_true(is.data.frame(ks) && nrow(ks) > 1L)
    expect_identical(rownames(ks), as.character(seq_len(nrow(ks))))
})

test_that("a given ensemble is used, and results repeat with the same randomState", {
    skip_without_python()
    x <- two_groups()
    ens <- ensemble(x, nPartitions = 12, k = c(2, 4), randomState = 1)$labels
    a <- pcc(x, nClusters = 3, ensemble = ens, randomState = 5)
    b <- pcc(x, nClusters = 3, ensemble = ens, randomState = 5)
    expect_identical(a$labels, b$labels)
    expect_equal(a$membership, b$membership)
    expect_error(pcc(x, ensemble = ens[1:10, ]), "ensemble has 10 rows but x has 40 items")
})

test_that("randomState seeds the ensemble a method builds, as ensemble() with it", {
    skip_without_python()
    x <- two_groups()
    built <- pcc(x, nClusters = 2, randomState = 5, ensembleArgs = small_ensemble)
    alone <- do.call(ensemble, c(list(x), small_ensemble, list(randomState = 5)))
    seed0 <- do.call(ensemble, c(list(x), small_ensemble))
    expect_identical(built$obsm$scc_ensemble, alone$labels)
    expect_false(identical(alone$labels, seed0$labels))
})

test_that("pla() and dpp() on a matrix", {
    skip_without_python()
    x <- two_groups()
    res <- pla(x, nClusters = 2, ensembleArgs = small_ensemble)
    expect_equal(dim(res$membership), c(40L, 2L))
    expect_equal(unname(rowSums(res$membership)), rep(1, 40), tolerance = 1e-8)
    expect_gt(ari(res$labels, truth), 0.95)
    res <- dpp(x, nRuns = 30)
    expect_length(res$labels, 40L)
    expect_gt(ari(res$labels, truth), 0.95)
})

test_that("bad input gives clear errors", {
    skip_without_python()
    x <- two_groups()
    expect_error(pcc(as.data.frame(x)), "as.matrix")
    expect_error(pcc(x, use.dimred = "PCA"), "needs a SingleCellExperiment; x is a matrix")
    expect_error(pcc(letters), "numeric matrix")
    y <- x
    y[1, 1] <- NA
    expect_error(pcc(y, ensembleArgs = small_ensemble), "NaN")
    expect_error(pcc(x, nClusters = 1, ensembleArgs = small_ensemble),
                 "nClusters must be a whole number >= 2")
    expect_error(dpp(x, ensemble = matrix(0L, 40, 2)), "dpp\\(\\) has no argument 'ensemble'")
})

test_that("sparse matrices are accepted", {
    skip_without_python()
    x <- abs(two_groups())
    x[x < 1] <- 0
    sx <- methods::as(x, "CsparseMatrix")
    a <- ensemble(sx, nPartitions = 6, k = 2)
    b <- ensemble(x, nPartitions = 6, k = 2)
    expect_identical(a$labels, b$labels)
})
