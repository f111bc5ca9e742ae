test_that("vectors are values (lists), sccRange() a range (tuple), names are checked", {
    skip_without_python()
    args <- scconsensusR:::.py_args(list(k = 2:10, method = "kmeans", ks = list(3, 5),
                                         r = sccRange(2, 20)))
    expect_equal(class(args)[1], "python.builtin.dict")
    r <- reticulate::py_to_r(args)
    expect_equal(r$method, "kmeans")
    builtins <- reticulate::import_builtins(convert = FALSE)
    type <- function(key) reticulate::py_to_r(builtins$type(args[key])$`__name__`)
    expect_equal(type("k"), "list")
    expect_equal(type("ks"), "list")
    expect_equal(type("r"), "tuple")
    expect_error(scconsensusR:::.py_args(list(1, 2)), "must be named")
    expect_error(sccRange(5, 2), "lo <= hi")
    expect_equal(unclass(sccRange(c(2, 20))), c(2, 20))
})

test_that("R-style names and whole numbers reach Python as ints", {
    skip_without_python()
    bridge <- scconsensusR:::.scc_bridge()
    tl <- reticulate::import("scconsensus.tl", convert = FALSE)
    conv <- reticulate::py_to_r(bridge$encode(bridge$convert_kwargs(
        tl$ensemble,
        scconsensusR:::.py_args(list(nPartitions = 5, k = c(2, 6), subsample = 1,
                                     n.neighbors = 7, randomState = 3)))))
    expect_identical(conv$n_partitions, 5L)
    expect_identical(unlist(conv$k), c(2L, 6L))
    expect_identical(conv$n_neighbors, 7L)
    expect_identical(conv$random_state, 3L)
    expect_identical(conv$subsample, 1)  # a float parameter stays a float
    expect_error(ensemble(two_groups(), nClustres = 3),
                 "ensemble\\(\\) has no argument 'nClustres'.*nPartitions")
})

test_that("snake_case and dotted spellings of named arguments map onto them (item 3)", {
    skip_without_python()
    x <- two_groups()
    a <- pcc(x, n_clusters = 4, ensembleArgs = small_ensemble, progress = FALSE)
    expect_equal(a$uns$pcc$params$n_clusters, 4L)
    b <- pcc(x, n.clusters = 4, random_state = 0, ensembleArgs = small_ensemble,
             progress = FALSE)
    expect_identical(a$labels, b$labels)
    expect_error(pcc(x, nClusters = 3, n_clusters = 4),
                 "'n_clusters' and 'nClusters' are the same argument; give it once.",
                 fixed = TRUE)
    expect_error(pcc(x, n_clusters = 3, n.clusters = 4), "given twice")
    ens <- ensemble(x, n_partitions = 7, k = 2, progress = FALSE)
    expect_equal(ncol(ens$labels), 7L)
    expect_identical(ens$uns$params$n_partitions, 7L)
    d <- dpp(x, n_runs = 12, random_state = 2, progress = FALSE)
    expect_equal(d$uns$dpp$params$n_runs, 12L)
    expect_equal(d$uns$dpp$params$random_state, 2L)
    # key_added is name
    p <- pla(x, nClusters = 2, key_added = "myPla", ensembleArgs = small_ensemble,
             progress = FALSE)
    expect_true("myPla" %in% names(p$obs))
    expect_error(pla(x, name = "a", key_added = "b"), "same argument")
})

test_that("k = 2:10 and k = c(3, 5, 8) are values; sccRange() a range (item 4)", {
    skip_without_python()
    x <- two_groups()
    ens <- ensemble(x, nPartitions = 9, k = 2:10, progress = FALSE)
    expect_equal(ens$uns$partitions$k, 2:10)
    expect_equal(unname(apply(ens$labels, 2, max, na.rm = TRUE)), 2:10)
    ens <- ensemble(x, nPartitions = 6, k = c(3, 5, 8), progress = FALSE)
    expect_equal(ens$uns$partitions$k, c(3L, 5L, 8L, 3L, 5L, 8L))
    ens <- ensemble(x, nPartitions = 20, k = sccRange(2, 4), progress = FALSE)
    expect_true(all(ens$uns$partitions$k %in% 2:4))
    expect_gt(length(unique(ens$uns$partitions$k)), 1L)
    res <- pcc(x, nClusters = 3, ensembleArgs = list(nPartitions = 8, k = 2:5),
               progress = FALSE)
    expect_equal(res$uns$scc_ensemble$partitions$k, rep(2:5, 2))
    # R-worded errors, no Python tuples
    expect_error(ensemble(x, nPartitions = 4, k = c(2.5, 3)),
                 "k must be \"auto\" or whole numbers.*k = 2:10.*sccRange\\(2, 20\\)")
    expect_error(ensemble(x, nPartitions = 4, k = "a"), "k must be \"auto\" or whole numbers")
    expect_error(pcc(x, ensembleArgs = list(k = 2.5)), "k must be \"auto\" or whole numbers")
    # NA arrived in Python as True ("n_clusters must be an integer, got True")
    expect_error(pcc(x, nClusters = NA), "nClusters = NA: give a value, or leave nClusters out")
    expect_error(pcc(x, randomState = NA_integer_), "randomState = NA")
    expect_error(pcc(x, progress = "no"), "progress must be TRUE or FALSE, not \"no\"")
    ens <- ensemble(x, nPartitions = 4, k = 2, progress = FALSE)
    expect_error(pcc(x, ensemble = ens), "whole result of ensemble\\(\\).*ens\\$labels")
    # a vector of resolutions was read as a range in Python, silently
    expect_error(ensemble(x, nPartitions = 4, method = "leiden", resolution = c(0.5, 1)),
                 "resolution takes one number.*sccRange\\(0.5, 2\\)")
    expect_error(pcc(x, ensembleArgs = list(method = "leiden", resolution = c(0.5, 1))),
                 "resolution takes one number")
    err <- tryCatch(ensemble(x, nPartitions = 4, k = 1:3), error = conditionMessage)
    expect_match(err, "k=1 is too small")
    expect_no_match(err, "tuple|ValueError")
})
