(function(){
document.querySelectorAll("svg.chart g.legend[data-model]").forEach(function(g){
  g.addEventListener("click",function(){
    var svg=g.closest("svg"),m=g.getAttribute("data-model"),off=!g.classList.contains("bg");
    svg.querySelectorAll("[data-model]").forEach(function(e){
      if(e.getAttribute("data-model")!==m||e.tagName==="text")return;
      e.classList.toggle("bg",off);
      if(!off&&e!==g)e.parentNode.appendChild(e);
    });
  });
});
})();
