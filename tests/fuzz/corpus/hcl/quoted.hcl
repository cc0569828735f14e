api-host = "a b\"c"
api-host = last
