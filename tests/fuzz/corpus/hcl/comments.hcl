# comment
// other comment

api-timeout = 120
api-user-id = "alice"
api-access-key = "k3y"
