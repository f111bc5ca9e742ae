library(testthat)
library(scconsensusR)

test_check("scconsensusR")
