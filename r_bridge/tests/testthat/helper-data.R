# Two well separated groups: 12 features x 40 items (features in rows).
two_groups <- function() {
    set.seed(42)
    x <- cbind(matrix(rnorm(12 * 20), 12), matrix(rnorm(12 * 20, mean = 4), 12))
    dimnames(x) <- list(paste0("g", 1:12), paste0("c", 1:40))
    x
}

truth <- factor(rep(c("a", "b"), each = 20))

# Adjusted Rand index, to check recovered groups without label matching.
# share of items in their cluster's majority group: 1 when every cluster lies within
# one group (a K above the number of groups may split a group, never mix two)
purity <- function(cl, groups) sum(apply(table(cl, groups), 1, max)) / length(cl)

ari <- function(a, b) {
    tab <- table(a, b)
    comb <- function(n) sum(choose(n, 2))
    index <- comb(tab)
    expected <- comb(rowSums(tab)) * comb(colSums(tab)) / choose(sum(tab), 2)
    maximum <- (comb(rowSums(tab)) + comb(colSums(tab))) / 2
    (index - expected) / (maximum - expected)
}

skip_without_python <- function() {
    ok <- sccAvailable()
    if (!isTRUE(ok)) skip(paste("scconsensus not available in Python:", attr(ok, "reason")))
}

small_ensemble <- list(nPartitions = 12, k = c(2, 4))
