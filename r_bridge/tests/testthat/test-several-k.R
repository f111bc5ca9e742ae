# nClusters = c(2, 4): pcc() and pla() fit each K, as Python's n_clusters=[2, 4] does.

test_that("several nClusters on a matrix give one result per K, each as a single K's", {
    skip_without_python()
    x <- two_groups()
    ens <- ensemble(x, nPartitions = 12, k = c(2, 4), randomState = 1)$labels
    both <- pcc(x, nClusters = c(2, 4), ensemble = ens, randomState = 3, progress = FALSE)
    expect_named(both, c("pcc_k2", "pcc_k4"))
    for (k in c(2, 4)) {
        one <- pcc(x, nClusters = k, ensemble = ens, randomState = 3, progress = FALSE)
        r <- both[[paste0("pcc_k", k)]]
        expect_identical(r$labels, one$labels)
        expect_equal(r$membership, one$membership)
        expect_equal(r$confidence, one$confidence)
        # each result holds its own K's values only
        expect_named(r$obs, paste0("pcc_k", k, c("", "_confidence", "_entropy")))
        expect_named(r$uns, paste0("pcc_k", k))
        expect_equal(r$uns[[1]]$params$n_clusters, k)
    }
    expect_gt(ari(both$pcc_k2$labels, truth), 0.95)
    # a built ensemble is shared by every K's result; PLA and a name of one's own too
    p <- pla(x, nClusters = c(2, 4), name = "lat", ensembleArgs = small_ensemble,
             progress = FALSE)
    expect_named(p, c("lat_k2", "lat_k4"))
    expect_identical(p$lat_k2$obsm$scc_ensemble, p$lat_k4$obsm$scc_ensemble)
    expect_lte(nlevels(p$lat_k4$labels), 4)
})

test_that("several nClusters on a SingleCellExperiment store every K", {
    skip_without_python()
    sce <- SingleCellExperiment::SingleCellExperiment(assays = list(logcounts = two_groups()))
    out <- pcc(sce, nClusters = c(2, 4), ensembleArgs = small_ensemble, progress = FALSE)
    cols <- names(SummarizedExperiment::colData(out))
    expect_true(all(c("pcc_k2", "pcc_k2_confidence", "pcc_k4", "pcc_k4_entropy") %in% cols))
    expect_true(all(c("pcc_k2_membership", "pcc_k4_membership") %in%
                    SingleCellExperiment::reducedDimNames(out)))
    expect_equal(S4Vectors::metadata(out)$pcc_k4$params$n_clusters, 4L)
    expect_equal(levels(out$pcc_k2), c("1", "2"))
    expect_gt(ari(out$pcc_k2, truth), 0.95)
})

test_that("a list of one K is fitted per K, as Python's n_clusters=[4]", {
    skip_without_python()
    x <- two_groups()
    ens <- ensemble(x, nPartitions = 12, k = c(2, 4), randomState = 1)$labels
    one <- pcc(x, nClusters = list(2), ensemble = ens, progress = FALSE)
    expect_named(one, "pcc_k2")
    expect_gt(ari(one$pcc_k2$labels, truth), 0.95)
    # a single number is one result under the name itself
    expect_named(pcc(x, nClusters = 2, ensemble = ens, progress = FALSE)$uns, "pcc")
})

test_that("consensusK() keeps every k's labels (one membership per k, one result)", {
    skip_without_python()
    ck <- consensusK(two_groups(), maxK = 4, reps = 10, keepK = "all", progress = FALSE)
    expect_identical(ck$k, 2:4)
    expect_identical(colnames(attr(ck, "labels")), c("k2", "k3", "k4"))
})

test_that("bad vectors of nClusters are refused before any work, in R terms", {
    skip_without_python()
    x <- two_groups()
    expect_error(pcc(x, nClusters = c(2, 2)), "nClusters lists 2 more than once")
    expect_error(pla(x, nClusters = c(2, 40)), "nClusters = 40 is too large for 40 items")
    expect_error(pcc(x, nClusters = c(2, 1.5)), "a vector of them \\(c\\(4, 8\\)\\)")
    expect_error(pcc(x, nClusters = c("auto", "4")), "nClusters must be")
    expect_error(dpp(x, nClusters = c(2, 3)), "this method fits one number of clusters")
    expect_error(pcc(x, nClusters = integer(0)), "nClusters is empty \\(an empty k_candidates")
    expect_error(pcc(x, nClusters = list()), "nClusters is empty")
    expect_error(pcc(x, nClusters = factor(c(2, 4))), "nClusters is a factor")
    expect_error(pcc(x, nClusters = list(2, "a")), "nClusters must be")
    expect_error(PCCParam(nClusters = c(2, 4)), "one: clusterRows\\(\\) returns one labelling")
    sce <- SingleCellExperiment::SingleCellExperiment(assays = list(logcounts = x))
    expect_error(pcc(sce, nClusters = c(2, 3), colLabels = TRUE),
                 "colLabels\\(x\\) <- x\\$pcc_k2")
})
